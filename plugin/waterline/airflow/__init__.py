"""Airflow 3 integration: the same feeds, `waterline.Feed` and guarantees as the Dagster one.

    # an Airflow DAG file
    from waterline.airflow import dags_from_specs
    globals().update(dags_from_specs(["feeds/ticks.yaml"], base_dir=REPO_ROOT))

Per feed: ``<feed>_ingest`` (a run per partition; data intervals are
partitions, so ``catchup`` and ``airflow backfill create`` ingest past ones)
and ``<feed>_release`` (continuous; a deferrable task waits in the triggerer
for the next due moment, reading Delta commit metadata only, then releases).
``<feed>_maintain`` and ``<feed>_audit`` (hourly by default: keep the tables
flat; prove the releases since the last audit were on time). ``<feed>_apply``
(by hand: a deployed spec change takes effect; until then the release task
skips with ``spec not applied: ...``). Assets
``<feed>/held`` and ``<feed>/<tier>``; a release's asset events carry
the tier's W_T in their ``extra``.

The pieces, as in an Airflow provider: `WaterlineHook` (the ``waterline``
connection: where Spark runs) returns a `waterline.Feed`; the operators
`WaterlineIngestOperator`, `WaterlineReleaseOperator`, `WaterlineMaintainOperator`,
`WaterlineAuditOperator` and `WaterlineApplyOperator` and the trigger
`WaterlineDueTrigger` are thin adapters over it; `partitions_for_run` and
`partitions_in_interval` are the pure mapping of runs to partitions. See
docs/airflow.md.

The names below load on first use (PEP 562): Airflow's providers manager imports
`waterline.airflow.provider` through the ``apache_airflow_provider`` entry point while
Airflow's own configuration is still loading, so this package must not import Airflow
when it is imported, only when one of its names is asked for.
"""
from __future__ import annotations

import importlib
from typing import Any

from waterline.extras import require

# Checked first, so a missing Airflow reads as one line naming the extra.
require("waterline.airflow", "airflow")

_HOMES = {
    "waterline.airflow.assets": ["held_asset", "tier_asset", "tier_assets"],
    "waterline.airflow.dags": ["apply_dag", "apply_dag_id", "audit_dag", "audit_dag_id", "dags_from_specs", "ingest_dag",
                               "ingest_dag_id",
                               "release_dag", "release_dag_id"],
    "waterline.airflow.errors": ["airflow_failures"],
    "waterline.airflow.hooks": ["WaterlineHook"],
    "waterline.airflow.operators": ["WaterlineApplyOperator", "WaterlineAuditOperator", "WaterlineIngestOperator",
                                    "WaterlineMaintainOperator",
                                    "WaterlineReleaseOperator"],
    "waterline.airflow.partitions": ["partitions_for_run", "partitions_in_interval"],
    "waterline.airflow.triggers": ["WaterlineDueTrigger"],
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'waterline.airflow' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME_OF])


__all__ = sorted(_HOME_OF)
