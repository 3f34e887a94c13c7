"""Airflow 3 integration: the same feeds, `waterline.Feed` and guarantees as the Dagster one.

    # an Airflow DAG file
    from waterline.airflow import dags_from_specs
    globals().update(dags_from_specs(["feeds/ticks.yaml"], base_dir=REPO_ROOT))

Per feed: ``<feed>_ingest`` (a run per partition; data intervals are
partitions, so ``catchup`` and ``airflow backfill create`` ingest past ones)
and ``<feed>_release`` (continuous; a deferrable task waits in the triggerer
for the next due moment, reading Delta commit metadata only, then releases).
``<feed>_maintain`` and ``<feed>_audit`` (hourly by default: keep the tables
flat; prove the releases since the last audit were on time). Assets
``<feed>/held`` and ``<feed>/<tier>``; a release's asset events carry
the tier's W_T in their ``extra``.

The pieces, as in an Airflow provider: `WaterlineHook` (the ``waterline``
connection: where Spark runs) returns a `waterline.Feed`; the operators
`WaterlineIngestOperator`, `WaterlineReleaseOperator`, `WaterlineMaintainOperator`
and `WaterlineAuditOperator` and the trigger
`WaterlineDueTrigger` are thin adapters over it; `partitions_for_run` and
`partitions_in_interval` are the pure mapping of runs to partitions. See
docs/airflow.md.
"""
# ruff: noqa: E402

from waterline.extras import require

# Checked before the imports below, so a missing Airflow reads as one line naming the extra.
require("waterline.airflow", "airflow")

from waterline.airflow.assets import held_asset, tier_asset, tier_assets
from waterline.airflow.dags import (
    audit_dag,
    audit_dag_id,
    dags_from_specs,
    ingest_dag,
    ingest_dag_id,
    release_dag,
    release_dag_id,
)
from waterline.airflow.errors import airflow_failures
from waterline.airflow.hooks import WaterlineHook
from waterline.airflow.operators import (
    WaterlineAuditOperator,
    WaterlineIngestOperator,
    WaterlineMaintainOperator,
    WaterlineReleaseOperator,
)
from waterline.airflow.partitions import partitions_for_run, partitions_in_interval
from waterline.airflow.triggers import WaterlineDueTrigger

__all__ = [
    "WaterlineAuditOperator",
    "WaterlineDueTrigger",
    "WaterlineHook",
    "WaterlineIngestOperator",
    "WaterlineMaintainOperator",
    "WaterlineReleaseOperator",
    "airflow_failures",
    "audit_dag",
    "audit_dag_id",
    "dags_from_specs",
    "held_asset",
    "ingest_dag",
    "ingest_dag_id",
    "partitions_for_run",
    "partitions_in_interval",
    "release_dag",
    "release_dag_id",
    "tier_asset",
    "tier_assets",
]
