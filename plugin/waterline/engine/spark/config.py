"""Where a feed's Spark runs and with which conf: plain data, no pyspark.

`SessionConfig` is read from a spec's ``spark:`` key and the environment;
`spark_conf` is the full conf of a classic session (its jars: `jars.jar_conf`: a
folder, Spark's Ivy resolution, or the cluster's own). The Spark-running rooms'
`get_session` turns them into a session; the Dagster resource, a local cluster's
Connect server and `waterline.Feed` use them without importing pyspark.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from waterline.engine.delta import storage
from waterline.engine.spark.jars import jar_conf
from waterline.errors import WaterlineError

MASTER_ENV = "WATERLINE_SPARK_MASTER"
REMOTE_ENV = "WATERLINE_SPARK_REMOTE"
DEFAULT_MASTER = "local[2]"
_MASTER_SCHEMES = ("local", "spark://", "yarn", "k8s://", "mesos://")

# Session confs the engine relies on in every mode; over Spark Connect they are the
# only ones a client can set (static confs belong to the server).
ENGINE_SESSION_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.databricks.delta.autoCompact.enabled": "false",
    # Parquet timestamps as INT64 microseconds, not Spark's default INT96, which has no
    # statistics: tier files then carry event_time bounds consumers skip files by.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # PySpark 4 sends each DataFrame function's Python call site to the JVM for error
    # context (set, clear, a conf read: ~10 round trips a call, ~0.3 s of a stream batch's
    # expression building). waterline's errors name the spec key and keep Spark's first
    # line; the call site inside waterline would tell a user nothing.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}


@dataclass(frozen=True)
class SessionConfig:
    """Where Spark runs: ``master`` for classic Spark (local or a cluster), ``remote``
    (``sc://host:port``) for Spark Connect; ``conf`` is added to (and wins over) waterline's.

    Precedence, most specific last: the default (``local[2]``), the spec's ``spark:``
    key, then the environment (``WATERLINE_SPARK_MASTER`` / ``WATERLINE_SPARK_REMOTE``),
    as explicit run-time settings override a file. Either env variable replaces both
    of the spec's: a remote and a master never mix.
    """

    master: str = DEFAULT_MASTER
    remote: str | None = None
    app_name: str = "waterline"
    conf: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_master(self.master, MASTER_ENV)
        if self.remote is not None:
            check_remote(self.remote, REMOTE_ENV)

    @property
    def mode(self) -> str:
        """``connect``, ``local`` or ``cluster``."""
        if self.remote:
            return "connect"
        return "local" if self.master.startswith("local") else "cluster"

    @classmethod
    def from_env(cls, base: SessionConfig | None = None) -> SessionConfig:
        """``base`` (default: local) with the environment's master or remote applied."""
        base = base or cls()
        master, remote = os.environ.get(MASTER_ENV) or None, os.environ.get(REMOTE_ENV) or None
        if master and remote:
            raise WaterlineError(f"set only one of {MASTER_ENV} and {REMOTE_ENV}")
        if remote:
            check_remote(remote, REMOTE_ENV)
            return replace(base, remote=remote, master=DEFAULT_MASTER)
        if master:
            check_master(master, MASTER_ENV)
            return replace(base, master=master, remote=None)
        return base

    @classmethod
    def resolve(cls, *layers: Any, env: bool = True, app_name: str = "waterline") -> SessionConfig:
        """The one answer to "where does this feed's Spark run?".

        waterline's default (``local[2]``), then each of ``layers`` in order (anything with
        ``master``, ``remote`` and ``conf``: the spec's ``spark:`` key, an Airflow connection's
        settings, a Dagster resource's fields, `Feed`'s ``spark=`` argument, as `SparkSettings`),
        then, with ``env``, ``WATERLINE_SPARK_MASTER`` / ``WATERLINE_SPARK_REMOTE``. A layer
        that names a master or a remote replaces both (the two never mix); ``conf`` entries add
        up, later layers winning. None layers are skipped."""
        config = cls(app_name=app_name)
        for layer in layers:
            if layer is None:
                continue
            master, remote = getattr(layer, "master", None), getattr(layer, "remote", None)
            if master or remote:
                config = replace(config, master=master or DEFAULT_MASTER, remote=remote or None)
            config = replace(config, conf={**config.conf, **dict(getattr(layer, "conf", None) or {})})
        return cls.from_env(config) if env else config

    @classmethod
    def for_spec(cls, spark_spec: Any | None) -> SessionConfig:
        """The config for a feed: its ``spark:`` key (a SparkSpec or None), then the environment."""
        return cls.resolve(spark_spec)


@dataclass(frozen=True)
class SparkSettings:
    """One layer of `SessionConfig.resolve`: where Spark runs as some adapter says (None: it
    does not say)."""

    master: str | None = None
    remote: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, url: str) -> SparkSettings:
        """``sc://host:port`` (Spark Connect) or a master URL (``local[4]``, ``spark://...``)."""
        return cls(remote=url) if url.startswith("sc://") else cls(master=url)


def check_master(master: str, where: str) -> str:
    """A classic master URL, or a WaterlineError naming ``where`` it came from."""
    if not isinstance(master, str) or not master.startswith(_MASTER_SCHEMES):
        raise WaterlineError(
            f"{where}: expected a Spark master URL (local[N], spark://host:port, yarn, k8s://...), got {master!r}"
        )
    return master


def check_remote(remote: str, where: str) -> str:
    """A Spark Connect URL, or a WaterlineError naming ``where`` it came from."""
    if not isinstance(remote, str) or not remote.startswith("sc://") or len(remote) <= len("sc://"):
        raise WaterlineError(f"{where}: expected a Spark Connect URL sc://host:port, got {remote!r}")
    return remote


#: waterline's Delta LogStore for S3 (jvm/src): commit files created only if absent, so Spark's
#: own commits (held creation, MERGE, OPTIMIZE, VACUUM) and waterline's commit writer exclude
#: each other; Delta's default S3 store would overwrite a commit another writer made.
CONDITIONAL_LOG_STORE = "dev.waterline.spark.ConditionalS3LogStore"

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.delta.logStore.s3a.impl": CONDITIONAL_LOG_STORE,
    "spark.delta.logStore.s3.impl": CONDITIONAL_LOG_STORE,
}

LOCAL_DEFAULTS = {
    **ENGINE_SESSION_CONF,
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.adaptive.enabled": "true",
    "spark.databricks.delta.snapshotPartitions": "2",
    # Delta's VACUUM (a user's, on a tier) lists files in this many tasks: 10,000 by default,
    # about a minute of empty tasks on two local cores for a table of a dozen files.
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "8",
    "spark.driver.memory": "2g",
    "spark.sql.warehouse.dir": str(Path(".waterline/spark-warehouse").absolute()),
}

_LOG4J = Path(__file__).with_name("log4j2.properties")


def _is_loopback(master: str) -> bool:
    return master.startswith("local") or "://127.0.0.1" in master or "://localhost" in master


def spark_conf(config: SessionConfig | None = None) -> dict[str, str]:
    """The full Spark conf waterline needs for a classic session (also fed to dagster-pyspark's resource)."""
    config = config or SessionConfig.from_env()
    conf = dict(LOCAL_DEFAULTS) if config.master.startswith("local") else dict(ENGINE_SESSION_CONF)
    if not config.master.startswith("local") and _is_loopback(config.master):
        # A cluster on this machine (`waterline spark start`): executors must reach the driver on
        # loopback, and it has local[N]'s few cores, so local's small partition counts fit it too
        # (Delta's default 50 snapshot partitions and 200 shuffle partitions cost ~10x here).
        conf.update(LOCAL_DEFAULTS)
    conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{_LOG4J}"
    conf.update(DELTA_CONF)
    conf.update(jar_conf())  # Delta's and waterline's jars: a folder, Ivy, or the cluster's own
    conf.update(storage.spark_conf())  # s3a:// endpoint and credentials, from the AWS env vars
    conf.update(config.conf)
    return conf


def connect_conf(config: SessionConfig) -> dict[str, str]:
    """Session confs a Spark Connect client sends: the engine's, then the user's."""
    return {**ENGINE_SESSION_CONF, **config.conf}
