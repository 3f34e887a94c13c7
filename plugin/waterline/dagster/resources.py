"""Spark for Dagster runs: dagster-pyspark's ``PySparkResource`` with waterline's conf.

This module imports pyspark (through dagster_pyspark): only the definitions
import it, never the release sensor. Creating the resource starts no JVM; the
session starts when a run that needs Spark begins executing.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from dagster import InitResourceContext
from dagster_pyspark import PySparkResource

from waterline.engine.session import SessionConfig, connect_conf, spark_conf

RESOURCE_KEY = "pyspark"


def waterline_spark_config(config: SessionConfig | None = None) -> dict[str, Any]:
    """The ``spark_config`` of the resource.

    Classic (local or a cluster): master, app name and `spark_conf()`. Spark Connect
    (``WATERLINE_SPARK_REMOTE`` or a spec's ``spark.remote``): the remote URL and the
    engine's session confs only, so a run process starts no JVM.
    """
    config = config or SessionConfig.from_env()
    if config.remote:
        return {"spark.remote": config.remote, **connect_conf(config)}
    return {"spark.master": config.master, "spark.app.name": "waterline-dagster", **spark_conf(config)}


class WaterlinePySparkResource(PySparkResource):
    """``PySparkResource`` that also points Python workers at this interpreter.

    waterline's own functions are pure Spark SQL; a feed's `job` may still use
    Python UDFs, whose workers must run an interpreter that has its code.
    """

    def setup_for_execution(self, context: InitResourceContext) -> None:
        from pyspark import SparkContext

        from waterline.engine.jvm_log import jvm_stderr_to_log
        from waterline.engine.spark_errors import silence_pyspark_error_logs

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        # A failing run reports one line (`one_line_failure`); the JVM's banner, log4j lines
        # and executors' Java stacks would otherwise fill the run worker's stderr (the
        # daemon's or `dagster dev`'s terminal): they go to the JVM log instead, and
        # PySpark's JSON copy of each SQL error is off.
        starts_jvm = SparkContext._active_spark_context is None and "spark.remote" not in (self.spark_config or {})
        with jvm_stderr_to_log() as jvm_log:
            super().setup_for_execution(context)
        silence_pyspark_error_logs()
        try:
            self.spark_session.sparkContext.setLogLevel("ERROR")
        except Exception:  # Spark Connect sessions have no SparkContext
            return
        if starts_jvm and jvm_log is not None and context.log is not None:
            context.log.info(f"Spark: the JVM's own log is {jvm_log} (WATERLINE_JVM_LOG)")


_SHARED: dict[str, WaterlinePySparkResource] = {}


def default_pyspark_resource(config: SessionConfig | None = None) -> WaterlinePySparkResource:
    """One shared instance per Spark config, so definitions of several feeds merge without conflicts.

    ``config`` defaults to the environment (WATERLINE_SPARK_MASTER / _REMOTE, else local)."""
    spark_config = waterline_spark_config(config or SessionConfig.from_env())
    key = json.dumps(spark_config, sort_keys=True)
    if key not in _SHARED:
        _SHARED[key] = WaterlinePySparkResource(spark_config=spark_config)
    return _SHARED[key]
