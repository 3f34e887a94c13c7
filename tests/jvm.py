"""The JVM flags of the Spark drivers the tests start as subprocesses.

Each such driver (a CLI run, a killed and restarted stream, an Airflow task run, a Dagster
run worker, a crash driver) does a few Spark operations and exits, so it spends most of its
CPU starting: loading, verifying and compiling Spark's, Delta's and the JDK's classes. Two remedies, measured
on a 2-core machine by a driver that starts a session, writes a Delta table, MERGEs into it
and counts it (41.7 core-seconds with Spark's defaults):

* C1-only JIT and the serial collector: C2 compilation and G1's concurrent threads are CPU
  that a short JVM never gets back (31-34% less machine CPU per driver; the local
  random-kill stream test alone, same seed: 490 s -> 454 s).
* A class-data-sharing archive (AppCDS, ``-XX:SharedArchiveFile``): the classes such a
  driver loads, parsed and verified once per machine and mapped by every later driver.
  With it, that driver took 30-35 core-seconds instead of 41.7 (session start 9.7 s -> 5.5 s,
  first Delta write 10 s -> 5.5 s). `start_class_archive` builds it (tests/conftest.py, as
  pytest starts, beside the first tests; ~80 s of one core, once per machine, JDK and Spark
  jars); a JVM that cannot map it (not built yet, another JDK, another class path) starts
  without it, silently.

Both reach the drivers through ``SPARK_SUBMIT_OPTS``, which Spark's launcher adds to the
driver's command line: `use_short_lived_drivers` (tests/conftest.py, at import) sets it for
every process the tests start. Not ``SPARK_CONF_DIR``: Spark puts that folder on the
driver's class path, and CDS refuses a class path holding a non-empty folder. Not
``JDK_JAVA_OPTIONS``: every ``java`` prints a line to stderr naming it, which the CLI tests'
one-line errors would carry. A JVM that lives for the whole run (a test process's own
session, a Connect server) starts in `long_lived_jvm`, without the flags: a 6-minute
in-process session ran 42% slower with C1 only.

Every test session, short- or long-lived, also evaluates Spark SQL interpreted
(`INTERPRETED`): the tests' data are a few rows, and compiling generated code for each new
query (Janino, then the JIT on the compiled classes) cost more than running it. Measured on
tests/engine/test_crash.py's phase-boundary cases and the differential's report test (one
worker session, five subprocess drivers): 768 -> 571 core-seconds. The cluster and Connect
test keeps whole-stage code generation over Connect (``long_lived_jvm(codegen=True)`` for
the server), so the compiled path is still compared with `waterline.semantics` on every
run, as users run it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[1]
ARCHIVES = REPO / "build" / "cds"  # git-ignored; one archive per JDK and jar set
SHORT_LIVED_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
# A JVM that cannot map the archive says so on stdout; the tests read the drivers' output.
QUIET_CDS = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
# Spark reads `spark.*` system properties as defaults of every session's conf (SparkConf).
INTERPRETED = ("-Dspark.sql.codegen.wholeStage=false", "-Dspark.sql.codegen.factoryMode=NO_CODEGEN")
CODEGEN_ENV = "WATERLINE_TEST_CODEGEN"  # "1": this run's sessions compile their queries, as users' do
_ENV = "SPARK_SUBMIT_OPTS"


def sql_flags() -> tuple[str, ...]:
    """How this run's Spark sessions evaluate SQL: interpreted unless ``WATERLINE_TEST_CODEGEN=1``."""
    return () if os.environ.get(CODEGEN_ENV) == "1" else INTERPRETED


@functools.cache  # stats every Spark jar; asked at import and by every long_lived_jvm
def class_archive() -> Path:
    """Where the archive for this machine's JDK and Spark jars lives (whether built or not)."""
    import pyspark

    home = os.environ.get("JAVA_HOME")  # Spark's launcher runs $JAVA_HOME/bin/java, else `java`
    java = shutil.which("java", path=os.path.join(home, "bin") if home else None)
    jars = Path(pyspark.__file__).parent / "jars"
    key = hashlib.sha256()
    for path in [Path(java or "java").resolve(), *sorted(jars.glob("*.jar"))]:
        stat = path.stat() if path.exists() else None
        key.update(f"{path}:{stat.st_size if stat else 0}:{stat.st_mtime_ns if stat else 0}\n".encode())
    key.update(" ".join(SHORT_LIVED_FLAGS).encode())  # not sql_flags: one archive serves both ways
    return ARCHIVES / f"driver-{key.hexdigest()[:16]}.jsa"


def short_lived_options(archive: Path) -> str:
    return " ".join([*SHORT_LIVED_FLAGS, *sql_flags(), f"-XX:SharedArchiveFile={archive}", *QUIET_CDS])


def use_short_lived_drivers() -> None:
    """Every Spark driver started from this process (and its children) gets the short-lived
    flags and the class archive, unless ``SPARK_SUBMIT_OPTS`` is set already."""
    os.environ.setdefault(_ENV, short_lived_options(class_archive()))


@contextmanager
def long_lived_jvm(*, codegen: bool = False) -> Iterator[None]:
    """A JVM started in the block gets the JVM's defaults, and evaluates SQL as `sql_flags`
    says (``codegen``: compiled, as users run it), if ``SPARK_SUBMIT_OPTS`` is what
    `use_short_lived_drivers` set."""
    ours = os.environ.get(_ENV) == short_lived_options(class_archive())
    saved = os.environ.pop(_ENV) if ours else None
    if ours and not codegen and sql_flags():
        os.environ[_ENV] = " ".join(sql_flags())
    try:
        yield
    finally:
        if saved is not None:
            os.environ[_ENV] = saved


def compiled_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a pytest run in a subprocess whose Spark sessions compile their queries (its
    conftest then sets the drivers' flags anew, without `INTERPRETED`)."""
    out = {**env, CODEGEN_ENV: "1"}
    if out.get(_ENV) == short_lived_options(class_archive()):
        del out[_ENV]
    return out


def start_class_archive() -> subprocess.Popen | str:
    """Start building this machine's class archive unless it exists: one driver doing what
    the tests' drivers do (`_archive_workload`), dumping the classes it loaded as it exits,
    in the background (drivers started before it ends start without it). Returns the
    builder, or a line to report when there is nothing to build."""
    archive = class_archive()
    if archive.exists():
        return f"JVM class archive: {archive.relative_to(REPO)}"
    ARCHIVES.mkdir(parents=True, exist_ok=True)
    for other in ARCHIVES.glob("driver-*"):
        if not other.name.startswith(archive.stem):  # another JDK's or jar set's, ~200 MB each
            other.unlink(missing_ok=True)
        elif other.suffix == ".partial" and _alive(int(other.suffixes[-2][1:])):
            # a run started by a test (the cluster test's pytest) while the main run builds
            return f"JVM class archive: being built by process {other.suffixes[-2][1:]}"
        else:
            other.unlink(missing_ok=True)  # left by a builder that died
    partial = archive.with_suffix(f".{os.getpid()}.partial")
    # a user's SPARK_CONF_DIR would put a non-empty folder on the class path: no archive then
    env = {k: v for k, v in os.environ.items() if k not in (_ENV, "SPARK_CONF_DIR")}
    env[_ENV] = " ".join([*SHORT_LIVED_FLAGS, *sql_flags(), f"-XX:ArchiveClassesAtExit={partial}", *QUIET_CDS])
    log = open(ARCHIVES / "build.log", "w")
    with log:
        proc = subprocess.Popen([sys.executable, "-m", "tests.jvm", str(partial), str(archive)], cwd=str(REPO),
                                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    proc.started = time.time()  # type: ignore[attr-defined]
    return proc


def finish_class_archive(builder: subprocess.Popen | str, timeout_s: float = 900) -> str:
    """Wait for a `start_class_archive` builder; a line saying what it did. A failure is
    reported, not raised: the drivers then start without the archive."""
    if isinstance(builder, str):
        return builder
    try:
        code = builder.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        builder.kill()
        builder.wait()
        return f"JVM class archive: not built (its driver ran over {timeout_s:.0f} s); drivers started without it"
    archive = Path(builder.args[-1])
    if code != 0 or not archive.exists():
        tail = (ARCHIVES / "build.log").read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return f"JVM class archive: not built (exit {code}: {tail[0]}); drivers started without it"
    took = archive.stat().st_mtime - builder.started  # type: ignore[attr-defined]  # finished long before now
    return f"JVM class archive: built {archive.relative_to(REPO)} in {took:.0f} s, beside the first tests"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # PermissionError: alive, another user's
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _archive_workload(partial: Path, archive: Path) -> None:
    """What a test's driver typically does (a session with waterline's conf, Delta writes, a
    MERGE, a windowed read, JSON), then waits for its JVM to exit (the JVM writes the archive
    as it exits) and renames ``partial`` to ``archive``: a JVM never maps a half-written one."""
    import tempfile

    from pyspark import SparkContext

    from waterline.engine.spark.session import get_session

    spark = get_session()
    with tempfile.TemporaryDirectory() as tmp:
        table, source = f"{tmp}/t", f"{tmp}/source.json"
        spark.range(100).selectExpr("id", "id % 7 AS k", "CAST(id AS STRING) AS v").write.format("delta").save(table)
        spark.range(50).selectExpr("id", "'x' AS v").write.json(source)
        spark.sql(f"MERGE INTO delta.`{table}` t USING json.`{source}` s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET t.v = s.v WHEN NOT MATCHED THEN INSERT (id, k, v) VALUES (s.id, 0, s.v)")
        spark.sql(f"SELECT k, max_by(v, id) AS v, row_number() OVER (ORDER BY k) AS n FROM delta.`{table}` GROUP BY k") \
            .write.format("delta").mode("append").option("mergeSchema", "true").save(f"{tmp}/u")
        assert spark.read.format("delta").load(table).count() == 100
        jvm = SparkContext._gateway.proc  # spark-submit exec-ed into the JVM
        spark.stop()
        jvm.stdin.close()  # the JVM exits when its stdin closes, and dumps the archive then
        jvm.wait(timeout=600)
    if jvm.returncode != 0 or not partial.exists():
        raise SystemExit(f"the JVM exited {jvm.returncode} without writing {partial}")
    partial.rename(archive)


if __name__ == "__main__":
    _archive_workload(Path(sys.argv[1]), Path(sys.argv[2]))
