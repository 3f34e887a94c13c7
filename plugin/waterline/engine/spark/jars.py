"""Which jars a classic Spark start of waterline gets, and from where: plain data, no pyspark.

waterline needs Delta's jars (and, for stream sources, Spark's Kafka and Avro connectors; for
``s3a://``, hadoop-aws and the AWS SDK modules it loads) plus its own JVM classes
(``waterline-spark.jar``: the output committer and the conditional S3 LogStore, compiled into
the wheel). `jar_conf` picks one source, first match wins:

1. ``WATERLINE_JARS=provided``: the cluster or its image already has them; waterline adds none.
2. ``WATERLINE_JARS=<folder>``: every jar in that folder (an offline machine).
3. ``<venv>/share/waterline/jars`` holding Delta (`make setup`: a checkout's tests start
   Spark with no network).
4. Otherwise Spark's own resolution: ``spark.jars.packages`` (Ivy, from the user's Maven
   repository or mirror, as delta-spark's ``configure_spark_with_delta_pip`` does), cached by
   Ivy for later starts, with waterline's own jar on ``spark.jars``.

A Spark Connect server is used as it is: a client sends no jars (`config.connect_conf`).
"""

from __future__ import annotations

import os
import sys
from importlib import resources
from pathlib import Path

from waterline.errors import WaterlineError

JARS_ENV = "WATERLINE_JARS"
#: Maven Central alone, not Spark's default chain that starts at ~/.m2 (why: the file's comment)
IVY_SETTINGS = Path(__file__).with_name("ivysettings.xml")
PROVIDED = "provided"
OWN_JAR = "waterline-spark.jar"

#: Maven coordinates for Spark 4.2 / Scala 2.13. delta-spark's Python package is 4.4.1 but the
#: newest jars built for Spark 4.2 are 4.4.0 (Maven Central has no 4.4.1 of delta-spark_4.2_2.13),
#: which is why configure_spark_with_delta_pip (it names its own version) cannot be used as is.
PACKAGES = (
    "io.delta:delta-spark_4.2_2.13:4.4.0",
    "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",
    "org.apache.spark:spark-avro_2.13:4.2.0",
    "org.apache.hadoop:hadoop-aws:3.5.0",
    # the SDK modules hadoop-aws 3.5.0 loads, instead of its 650 MiB `bundle` (docs/decisions.md)
    "software.amazon.awssdk:s3:2.35.4",
    "software.amazon.awssdk:s3-transfer-manager:2.35.4",
    "software.amazon.awssdk:apache-client:2.35.4",
)
EXCLUDES = (
    "software.amazon.awssdk:bundle",
    "software.amazon.awssdk:netty-nio-client",  # the async client; s3a's calls are synchronous
    "org.wildfly.openssl:wildfly-openssl",  # native OpenSSL, only for fs.s3a.ssl.channel.mode=openssl
)
#: Artifacts of that closure pyspark 4.2 already ships in its jars/ (build/select_jars.py drops the
#: same from `make setup`'s folder): a second, older copy (parquet 1.16 against Spark's 1.17,
#: jackson 2.13) would only shadow Spark's. tests/packaging/test_jars.py checks each is in pyspark.
SPARK_SHIPS = (
    "at.yawk.lz4:lz4-java", "com.fasterxml.jackson.core:jackson-annotations",
    "com.fasterxml.jackson.core:jackson-core", "com.fasterxml.jackson.core:jackson-databind",
    "com.github.luben:zstd-jni", "com.google.code.findbugs:jsr305", "commons-codec:commons-codec",
    "commons-pool:commons-pool", "io.airlift:aircompressor", "org.apache.hadoop:hadoop-client-api",
    "org.apache.hadoop:hadoop-client-runtime", "org.apache.httpcomponents:httpclient",
    "org.apache.httpcomponents:httpcore", "org.apache.logging.log4j:log4j-api",
    "org.apache.logging.log4j:log4j-core", "org.apache.logging.log4j:log4j-slf4j2-impl",
    "org.apache.parquet:parquet-column", "org.apache.parquet:parquet-common", "org.apache.parquet:parquet-encoding",
    "org.apache.parquet:parquet-format-structures", "org.apache.parquet:parquet-hadoop",
    "org.apache.parquet:parquet-jackson", "org.locationtech.jts:jts-core", "org.roaringbitmap:RoaringBitmap",
    "org.scala-lang.modules:scala-parallel-collections_2.13", "org.slf4j:slf4j-api", "org.tukaani:xz",
    "org.xerial.snappy:snappy-java",
)


def setup_jars_dir() -> Path:
    """Where `make setup` puts the jars it resolved with Maven (a checkout's venv)."""
    return Path(sys.prefix) / "share" / "waterline" / "jars"


def jars_dir() -> Path:
    """The folder of jars a start uses when it uses one: ``WATERLINE_JARS`` or `make setup`'s."""
    setting = os.environ.get(JARS_ENV) or ""
    return Path(setting) if setting and setting != PROVIDED else setup_jars_dir()


def own_jar() -> Path | None:
    """``waterline-spark.jar`` as the wheel ships it (None in a checkout: `make setup` builds it
    into its jars folder instead)."""
    path = Path(str(resources.files("waterline") / "jars" / OWN_JAR))
    return path if path.is_file() else None


def _has_delta(folder: Path) -> bool:
    return any(folder.glob("delta-spark_*.jar"))


def folder_jars(folder: Path) -> list[str]:
    """Every jar of ``folder``, plus the wheel's own jar when the folder lacks one."""
    jars = sorted(str(p) for p in folder.glob("*.jar"))
    if not any(Path(j).name == OWN_JAR for j in jars) and (own := own_jar()) is not None:
        jars.append(str(own))
    return jars


def jar_conf() -> dict[str, str]:
    """The ``spark.jars*`` conf of a classic start (see the module docstring for the order)."""
    setting = os.environ.get(JARS_ENV) or ""
    if setting == PROVIDED:
        return {}
    if setting:
        folder = Path(setting)
        if not _has_delta(folder):
            raise WaterlineError(f"{JARS_ENV}={setting}: no delta-spark_*.jar in that folder "
                                 f"(a folder of jars, or '{PROVIDED}' when the cluster has them)")
        return {"spark.jars": ",".join(folder_jars(folder))}
    if _has_delta(setup_jars_dir()):
        return {"spark.jars": ",".join(folder_jars(setup_jars_dir()))}
    own = own_jar()
    if own is None:
        raise WaterlineError(f"no {OWN_JAR} in this installation and no jars in {setup_jars_dir()}: "
                             f"run `make setup` in a checkout, or set {JARS_ENV}")
    return {"spark.jars.packages": ",".join(PACKAGES), "spark.jars.excludes": ",".join(EXCLUDES + SPARK_SHIPS),
            "spark.jars.ivySettings": str(IVY_SETTINGS), "spark.jars": str(own)}
