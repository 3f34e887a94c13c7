"""Dagster integration: assets, release sensor, asset checks and the ReleaseFeed Component.

    from waterline.dagster import definitions_from_specs
    defs = definitions_from_specs(["dags/feeds/ticks.yaml", "dags/feeds/indicators.yaml"])

Importing this package, building definitions and ticking the release sensor
import no pyspark and start no JVM: runs get a `waterline.Feed` from the
``waterline`` resource (`WaterlineResource`), which starts Spark when a step
first needs it.
This module is also the ``dagster_dg_cli.registry_modules`` entry point, so
``dg list components`` shows ``waterline.dagster.ReleaseFeed``.
"""
# ruff: noqa: E402

from waterline.extras import require

# Checked before the imports below, so a missing Dagster reads as one line naming the extra.
require("waterline.dagster", "dagster", "plotly", extra="dagster")

from waterline.dagster.component import ReleaseFeed
from waterline.dagster.definitions import definitions_from_specs, ingest_job_name, load_feed_specs
from waterline.dagster.sensors import build_release_sensor, release_job_name, release_sensor_name
from waterline.dagster.translator import WaterlineTranslator

__all__ = [
    "ReleaseFeed",
    "WaterlineTranslator",
    "build_release_sensor",
    "definitions_from_specs",
    "ingest_job_name",
    "load_feed_specs",
    "release_job_name",
    "release_sensor_name",
]
