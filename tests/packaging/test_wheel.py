"""The wheel as a data team installs it: built once per session from the checkout (sdist,
then the wheel from it), installed from the package index (no lock, no make, no Maven) into
a fresh virtualenv outside the checkout, on Python 3.12 and 3.13 (the full suite runs on
3.11). A feed in a temp folder plans, ingests, releases and reads on local Spark, and a
Dagster code location built with `definitions_from_specs` loads. `[airflow]` installs
without Dagster, is listed by ``airflow providers list`` and parses a feed's DAGs.

Spark starts here take their jars from an offline folder (``WATERLINE_JARS``, the documented
setting) holding `make setup`'s Delta jars but not its ``waterline-spark.jar``: the wheel's
own compiled classes are what the session loads, and no test start needs the network. The
Ivy path (no setting) is measured in docs/benchmarks.md. Timings land in
``test-artifacts/packaging.tsv``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tests.packaging.smoke_feed import SPEC
from waterline.engine.spark.jars import OWN_JAR, setup_jars_dir

pytestmark = pytest.mark.heavy(4)

REPO = Path(__file__).resolve().parents[2]
SMOKE = Path(__file__).with_name("smoke_feed.py")
TIMINGS = REPO / "test-artifacts" / "packaging.tsv"
CODE_LOCATION = """
from waterline.dagster import definitions_from_specs

defs = definitions_from_specs(["trades.yaml"])
"""


def _record(what: str, seconds: float) -> None:
    TIMINGS.parent.mkdir(exist_ok=True)
    with TIMINGS.open("a") as out:
        out.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\t{what}\t{seconds:.1f}\n")


def _interpreter(version: str) -> str | None:
    """pyenv's newest ``version`` interpreter, else ``python<version>`` on PATH."""
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
        found = sorted(Path(root, "versions").glob(f"{version}.*/bin/python{version}")) if root else []
        if found:
            return str(found[-1])
    return shutil.which(f"python{version}")


def _clean_env(**extra: str) -> dict[str, str]:
    """This environment without the dev venv's traces (a user's shell has none of them)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(sys.prefix))
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return {**env, **extra}


def _run(argv: list[str], cwd: Path, timeout: float, **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=_clean_env(**env))
    assert proc.returncode == 0, f"{' '.join(argv)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    started = time.monotonic()
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], cwd=out, timeout=600)
    _record("build sdist+wheel", time.monotonic() - started)
    (built,) = out.glob("waterline_tiers-*.whl")
    _record(f"wheel size KiB {built.name}", built.stat().st_size / 1024)
    return built


@pytest.fixture(scope="session")
def offline_jars(tmp_path_factory) -> Path:
    """`make setup`'s jars without its waterline-spark.jar: the wheel's must be the one used."""
    folder = tmp_path_factory.mktemp("jars")
    source = setup_jars_dir()
    assert any(source.glob("delta-spark_*.jar")), f"no Delta jars in {source}: run `make setup`"
    for jar in source.glob("*.jar"):
        if jar.name != OWN_JAR:
            (folder / jar.name).symlink_to(jar)
    return folder


def _venv(version: str, root: Path) -> Path:
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine (pyenv versions or python{version} on PATH): "
                    f"the wheel is not tried on {version}")
    _run([python, "-m", "venv", str(root)], cwd=root.parent, timeout=120)
    return root / "bin"


def test_the_wheel_carries_waterlines_jvm_classes(wheel):
    with zipfile.ZipFile(wheel) as whl:
        with zipfile.ZipFile(whl.open(f"waterline/jars/{OWN_JAR}")) as jar:
            names = set(jar.namelist())
    assert {"dev/waterline/spark/AttemptFolderCommitter.class",
            "dev/waterline/spark/ConditionalS3LogStore.class"} <= names


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_a_feed_and_a_dagster_code_location_from_the_wheel(version, wheel, offline_jars, tmp_path):
    bin_ = _venv(version, tmp_path / "venv")
    started = time.monotonic()
    _run([str(bin_ / "pip"), "install", "--quiet", f"{wheel}[dagster]"], cwd=tmp_path, timeout=900)
    _record(f"pip install [dagster] on {version}", time.monotonic() - started)

    work = tmp_path / "feed"
    work.mkdir()
    proc = _run([str(bin_ / "python"), str(SMOKE)], cwd=work, timeout=600, WATERLINE_JARS=str(offline_jars),
                WATERLINE_JVM_LOG=str(tmp_path / "jvm.log"))
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    _record(f"first ingest (Spark start, offline folder) on {version}", seen["first_ingest_s"])
    assert Path(seen["module"]).is_relative_to(tmp_path / "venv"), seen["module"]
    assert seen["version"] == wheel.name.split("-")[1]
    assert "tier delayed_15m" in seen["plan"]
    assert seen["rows"] == {"realtime": [1, 2, 3], "delayed_15m": [1, 2]}
    assert seen["classes"] == ["dev.waterline.spark.AttemptFolderCommitter", "dev.waterline.spark.ConditionalS3LogStore"]
    own = [j for j in seen["jars"] if j.endswith(f"/{OWN_JAR}")]
    assert len(own) == 1 and Path(own[0]).is_relative_to(tmp_path / "venv"), own

    (work / "defs.py").write_text(CODE_LOCATION)
    (tmp_path / "dagster_home").mkdir()
    proc = _run([str(bin_ / "dagster"), "definitions", "validate", "-f", "defs.py"], cwd=work, timeout=300,
                DAGSTER_HOME=str(tmp_path / "dagster_home"))
    assert "Validation successful for code location" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    proc = _run([str(bin_ / "python"), "-c", "import defs; print(sorted(k.to_user_string() for k in "
                 "defs.defs.get_repository_def().asset_graph.get_all_asset_keys()))"], cwd=work, timeout=300,
                DAGSTER_HOME=str(tmp_path / "dagster_home"))
    assets = proc.stdout.strip().splitlines()[-1]
    assert "trades/realtime" in assets and "trades/delayed_15m" in assets, assets

    proc = subprocess.run([str(bin_ / "python"), "-c", "import waterline.airflow"], cwd=work, capture_output=True,
                          text=True, timeout=120, env=_clean_env())
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].endswith(
        "waterline.airflow needs the [airflow] extra: pip install 'waterline-tiers[airflow]'")


AIRFLOW_DAG_FILE = """
from waterline.airflow import dags_from_specs

globals().update(dags_from_specs(["{spec}"]))
"""

AIRFLOW_PARSE = """
import json, sys
from airflow.dag_processing.dagbag import DagBag

bag = DagBag(dag_folder=sys.argv[1])  # AIRFLOW__CORE__LOAD_EXAMPLES=False: no examples
print(json.dumps({"dags": sorted(bag.dag_ids), "errors": {k: str(v) for k, v in bag.import_errors.items()},
                  "dagster": sorted(m for m in sys.modules if m.split(".")[0] == "dagster")}))
"""


def test_the_airflow_extra_is_a_provider_and_parses_dags_without_dagster(wheel, tmp_path):
    """``pip install "<wheel>[airflow]"`` in a fresh virtualenv: no Dagster comes with it,
    ``airflow providers list`` shows the provider, and `dags_from_specs` parses a feed's DAGs."""
    version = next((v for v in ("3.12", "3.13") if _interpreter(v)), None)
    if version is None:
        pytest.skip("no Python 3.12 or 3.13 on this machine (pyenv versions or on PATH)")
    bin_ = _venv(version, tmp_path / "venv")
    started = time.monotonic()
    _run([str(bin_ / "pip"), "install", "--quiet", f"{wheel}[airflow]"], cwd=tmp_path, timeout=1200)
    _record(f"pip install [airflow] on {version}", time.monotonic() - started)
    listed = _run([str(bin_ / "pip"), "list", "--format", "json"], cwd=tmp_path, timeout=120)
    names = {item["name"].lower() for item in json.loads(listed.stdout)}
    assert {"waterline-tiers", "apache-airflow", "pyspark"} <= names
    assert not [n for n in names if n.startswith("dagster")], sorted(n for n in names if n.startswith("dagster"))

    home, dags = tmp_path / "airflow_home", tmp_path / "dags"
    home.mkdir()
    dags.mkdir()
    (tmp_path / "trades.yaml").write_text(SPEC)
    (dags / "feeds.py").write_text(AIRFLOW_DAG_FILE.format(spec=tmp_path / "trades.yaml"))
    env = {"AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "AIRFLOW__CORE__DAGS_FOLDER": str(dags)}
    proc = _run([str(bin_ / "airflow"), "providers", "list", "-o", "json"], cwd=tmp_path, timeout=300, **env)
    providers = {p["package_name"]: p["version"] for p in json.loads(proc.stdout.strip().splitlines()[-1])}
    assert providers.get("waterline-tiers") == wheel.name.split("-")[1], providers

    proc = _run([str(bin_ / "python"), "-c", AIRFLOW_PARSE, str(dags)], cwd=tmp_path, timeout=300, **env)
    parsed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert parsed["errors"] == {}, parsed["errors"]
    assert parsed["dags"] == ["trades_apply", "trades_audit", "trades_ingest", "trades_maintain", "trades_release"], parsed
    assert parsed["dagster"] == [], parsed["dagster"]
