"""Spark for Dagster runs: dagster-pyspark's ``PySparkResource`` with waterline's conf.

This module imports pyspark (through dagster_pyspark): only the definitions
import it, never the release sensor. Creating the resource starts no JVM; the
session starts when a run that needs Spark begins executing.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from typing import Any

from dagster import InitResourceContext
from dagster_pyspark import PySparkResource

from waterline.engine.session import SessionConfig, spark_conf

RESOURCE_KEY = "pyspark"


def waterline_spark_config(config: SessionConfig | None = None) -> dict[str, Any]:
    """The ``spark_config`` of the resource: master and app name plus `spark_conf()`."""
    config = config or SessionConfig.from_env()
    out: dict[str, Any] = {}
    if config.remote:
        out["spark.remote"] = config.remote
    else:
        out["spark.master"] = config.master
    out["spark.app.name"] = "waterline-dagster"
    if not config.remote:
        out.update(spark_conf(config))
    return out


class WaterlinePySparkResource(PySparkResource):
    """``PySparkResource`` that also points Python UDF workers at this interpreter.

    waterline's calendar functions are Python UDFs: their workers must run the
    interpreter that has waterline installed (``PYSPARK_PYTHON``).
    """

    def setup_for_execution(self, context: InitResourceContext) -> None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        super().setup_for_execution(context)
        try:
            self.spark_session.sparkContext.setLogLevel("ERROR")
        except Exception:  # Spark Connect sessions have no SparkContext
            pass


@lru_cache(maxsize=1)
def default_pyspark_resource() -> WaterlinePySparkResource:
    """One shared instance, so definitions of several feeds merge without conflicts."""
    return WaterlinePySparkResource(spark_config=waterline_spark_config())
