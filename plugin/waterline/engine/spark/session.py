"""The process's Spark session, classic or Spark Connect, with Delta configured.

The conf comes from `waterline.engine.spark.config` (no pyspark there).
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from waterline.engine.spark.config import SessionConfig, connect_conf, spark_conf


def get_session(config: SessionConfig | None = None) -> SparkSession:
    """Return the process's Spark session, creating it with Delta on first use.

    Spark Connect: no JVM in this process; the server must have Delta (``waterline
    spark start`` starts one that has). pyspark switches a process to Connect for
    good once a Connect session exists (its column functions dispatch on a
    process-wide flag), so one process uses one mode.
    """
    config = config or SessionConfig.from_env()
    if config.remote:
        return _connect_session(config)
    return _classic_session(config)


def session_running(config: SessionConfig | None = None) -> bool:
    """Whether `get_session` would hand back a session this process already has (someone else
    started it) rather than start one: a classic SparkContext, or a Connect session."""
    config = config or SessionConfig.from_env()
    if config.remote:
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        return ConnectSession.getActiveSession() is not None or ConnectSession._get_default_session() is not None
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


def _connect_session(config: SessionConfig) -> SparkSession:
    builder = SparkSession.builder.remote(config.remote)
    for key, value in connect_conf(config).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _classic_session(config: SessionConfig) -> SparkSession:
    # Python workers (a feed's own job may use UDFs) run this interpreter; on a
    # standalone cluster on this machine too.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(config.app_name).master(config.master)
    for key, value in spark_conf(config).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
