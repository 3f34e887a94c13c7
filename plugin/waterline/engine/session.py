"""Spark session factory with Delta Lake configured from locally resolved jars.

The jars are resolved by `make setup` into ``<venv>/share/waterline/jars`` so a
Spark start never touches the network. ``WATERLINE_JARS`` overrides the folder.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from waterline.engine import storage
from waterline.errors import WaterlineError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

LOCAL_DEFAULTS = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.adaptive.enabled": "true",
    "spark.databricks.delta.snapshotPartitions": "2",
    # Tier and held tables are small per commit; skip auto-compaction surprises.
    "spark.databricks.delta.autoCompact.enabled": "false",
    "spark.driver.memory": "2g",
    "spark.sql.warehouse.dir": str(Path(".waterline/spark-warehouse").absolute()),
}

_LOG4J = Path(__file__).with_name("log4j2.properties")


def jars_dir() -> Path:
    """The folder holding the Delta jars for ``spark.jars``."""
    return Path(os.environ.get("WATERLINE_JARS") or Path(sys.prefix) / "share" / "waterline" / "jars")


def delta_jars() -> list[str]:
    folder = jars_dir()
    jars = sorted(str(p) for p in folder.glob("*.jar"))
    if not any("delta-spark_" in j for j in jars):
        raise WaterlineError(f"Delta jars not found in {folder}: run `make setup` (or set WATERLINE_JARS)")
    return jars


@dataclass(frozen=True)
class SessionConfig:
    """Where Spark runs. ``master`` for classic Spark, ``remote`` for Spark Connect."""

    master: str = "local[2]"
    remote: str | None = None
    app_name: str = "waterline"
    conf: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> "SessionConfig":
        return cls(
            master=os.environ.get("WATERLINE_SPARK_MASTER", "local[2]"),
            remote=os.environ.get("WATERLINE_SPARK_REMOTE") or None,
        )


def spark_conf(config: SessionConfig | None = None) -> dict[str, str]:
    """The full Spark conf waterline needs (also fed to dagster-pyspark's resource)."""
    config = config or SessionConfig.from_env()
    conf = dict(LOCAL_DEFAULTS) if config.master.startswith("local") else {}
    conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{_LOG4J}"
    conf.update(DELTA_CONF)
    conf["spark.jars"] = ",".join(delta_jars())
    conf.update(storage.spark_conf())  # s3a:// endpoint and credentials, from the AWS env vars
    conf.update(config.conf)
    return conf


def get_session(config: SessionConfig | None = None) -> "SparkSession":
    """Return the process's Spark session, creating it with Delta on first use."""
    from pyspark.sql import SparkSession

    config = config or SessionConfig.from_env()
    # Python UDF workers (the calendar functions) must run the interpreter that has waterline.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(config.app_name)
    if config.remote:
        builder = builder.remote(config.remote)
    else:
        builder = builder.master(config.master)
        for key, value in spark_conf(config).items():
            builder = builder.config(key, value)
    session = builder.getOrCreate()
    if not config.remote:
        session.sparkContext.setLogLevel("ERROR")
    return session
