"""``dags_from_specs``: per feed, an ingest DAG and a release DAG.

``<feed>_ingest``: one run per partition. A daily (hourly) feed runs on a daily
(hourly) UTC schedule whose data interval is the partition, from the scheme's
``start`` to its ``end``; ``catchup`` and ``airflow backfill create`` ingest past
partitions; a static feed is triggered by hand with ``{"partitions": [...]}``.
Its task's outlet is the held table's asset.

``<feed>_release``: a continuous DAG (one run at a time, the next starting when
one ends) whose one deferrable task waits in the triggerer for the feed's next
due moment, then releases; its outlets are the tier assets. The names match the
Dagster job ``<feed>_release`` and assets ``[feed, tier]``.

``<feed>_maintain``: on the spec's ``maintenance.every`` (hourly by default), one
task compacts, vacuums, checkpoints and cleans the feed's tables under the feed
lease, as the Dagster job ``<feed>_maintain`` does.

``<feed>_audit``: on the same schedule, one task proving the releases since its
last run were on time (`WaterlineAuditOperator`), as the Dagster job
``<feed>_audit`` does; it fails on a breach.

``<feed>_apply``: no schedule, triggered by hand once a changed spec file is
deployed; one task making it the feed's applied spec (`WaterlineApplyOperator`,
`Feed.apply`), as the Dagster job ``<feed>_apply`` does. Until it runs, the
release task releases nothing and skips with ``spec not applied: ...``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Union

from airflow.sdk import DAG, CronDataIntervalTimetable, CronTriggerTimetable

from waterline.airflow.hooks import WaterlineHook
from waterline.airflow.operators import (
    WaterlineApplyOperator,
    WaterlineAuditOperator,
    WaterlineIngestOperator,
    WaterlineMaintainOperator,
    WaterlineReleaseOperator,
    WaterlineStreamOperator,
)
from waterline.spec import FeedSpec
from waterline.spec.loader import load_feed_specs
from waterline.spec.partitions import DAILY_FORMAT, HOURLY_FORMAT

SpecLike = Union[str, Path, FeedSpec]
TAGS = ["waterline"]
#: Under the caller's ``default_args``: a transient failure (the feed lease busy or lost, a
#: commit race lost) is retried; a `WaterlineError` fails at once whatever ``retries`` says.
DEFAULT_ARGS: dict[str, Any] = {"retries": 2, "retry_delay": timedelta(seconds=30)}


def ingest_dag_id(spec: FeedSpec) -> str:
    return f"{spec.feed}_ingest"


def release_dag_id(spec: FeedSpec) -> str:
    return f"{spec.feed}_release"


def maintain_dag_id(spec: FeedSpec) -> str:
    return f"{spec.feed}_maintain"


def audit_dag_id(spec: FeedSpec) -> str:
    return f"{spec.feed}_audit"


def apply_dag_id(spec: FeedSpec) -> str:
    return f"{spec.feed}_apply"


def dags_from_specs(
    paths_or_specs: SpecLike | Iterable[SpecLike],
    *,
    base_dir: str | Path | None = None,
    catchup: bool = False,
    release_paused: bool | None = None,
    release_options: dict[str, Any] | None = None,
    default_args: dict[str, Any] | None = None,
    waterline_conn_id: str | None = WaterlineHook.default_conn_name,
) -> dict[str, DAG]:
    """``{dag_id: DAG}`` for every feed: put them in a DAG file's globals.

    ``catchup`` applies to the ingest DAGs (True: every partition from the scheme's
    start gets a run). ``release_paused`` sets the release DAGs' pause state at
    creation (None: the instance's ``dags_are_paused_at_creation``);
    ``release_options`` go to each `WaterlineReleaseOperator` (``poll_seconds``,
    ``idle_seconds``, ``deferrable``). ``default_args`` go over `DEFAULT_ARGS` (two
    retries, 30 s apart). ``waterline_conn_id`` names the `WaterlineHook` connection
    (Spark settings) of every task; None: the specs' ``spark:`` keys and the environment.
    """
    dags: dict[str, DAG] = {}
    for spec in load_feed_specs(paths_or_specs, base_dir=base_dir):
        ingest = ingest_dag(spec, catchup=catchup, default_args=default_args, waterline_conn_id=waterline_conn_id)
        release = release_dag(spec, is_paused_upon_creation=release_paused, default_args=default_args,
                              waterline_conn_id=waterline_conn_id, **(release_options or {}))
        maintain = maintain_dag(spec, is_paused_upon_creation=release_paused, default_args=default_args,
                                waterline_conn_id=waterline_conn_id)
        dags[ingest.dag_id] = ingest
        dags[release.dag_id] = release
        dags[maintain.dag_id] = maintain
        audit = audit_dag(spec, is_paused_upon_creation=release_paused, default_args=default_args,
                          waterline_conn_id=waterline_conn_id)
        dags[audit.dag_id] = audit
        applying = apply_dag(spec, default_args=default_args, waterline_conn_id=waterline_conn_id)
        dags[applying.dag_id] = applying
    return dags


def ingest_dag(spec: FeedSpec, *, catchup: bool = False, default_args: dict[str, Any] | None = None,
               waterline_conn_id: str | None = WaterlineHook.default_conn_name) -> DAG:
    """``<feed>_ingest``: a run per partition (see the module docstring); a stream feed's
    drains its topics every minute (`WaterlineStreamOperator`)."""
    scheme = spec.partitions
    schedule: Any = None
    start_date = datetime(2020, 1, 1, tzinfo=UTC)
    end_date = None
    if scheme.kind in ("daily", "hourly"):
        fmt, step = (DAILY_FORMAT, timedelta(days=1)) if scheme.kind == "daily" else (HOURLY_FORMAT, timedelta(hours=1))
        cron = "0 0 * * *" if scheme.kind == "daily" else "0 * * * *"
        schedule = CronDataIntervalTimetable(cron, timezone="UTC")
        start_date = datetime.strptime(scheme.start, fmt).replace(tzinfo=UTC)
        if scheme.end is not None:  # the last run's data interval starts at `end`
            end_date = datetime.strptime(scheme.end, fmt).replace(tzinfo=UTC) + step - timedelta(seconds=1)
    if spec.is_stream:  # nothing to partition: each run drains what the topics hold
        schedule, start_date, end_date = timedelta(minutes=1), datetime(2026, 1, 1, tzinfo=UTC), None
    with DAG(
        dag_id=ingest_dag_id(spec),
        description=(f"Drain the Kafka topics of feed {spec.feed} into its held table." if spec.is_stream
                     else f"Ingest partitions of feed {spec.feed} into its held table."),
        schedule=schedule,
        start_date=start_date,
        end_date=end_date,
        catchup=catchup,
        max_active_runs=1,  # one Spark ingest at a time; the feed lease would serialise them anyway
        tags=[*TAGS, spec.feed],
        default_args={**DEFAULT_ARGS, **(default_args or {})},
        doc_md=_doc(spec),
        params={"partitions": None} if scheme.kind == "static" else {},
    ) as dag:
        if spec.is_stream:
            WaterlineStreamOperator(task_id="stream", spec=spec, waterline_conn_id=waterline_conn_id)
        else:
            WaterlineIngestOperator(task_id="ingest", spec=spec, waterline_conn_id=waterline_conn_id)
    return dag


def release_dag(
    spec: FeedSpec,
    *,
    is_paused_upon_creation: bool | None = None,
    default_args: dict[str, Any] | None = None,
    waterline_conn_id: str | None = WaterlineHook.default_conn_name,
    **operator_options: Any,
) -> DAG:
    """``<feed>_release``: continuous; its one deferrable task releases at each due moment."""
    # Continuous DAGs run one at a time: two releases of a feed never overlap here.
    with _feed_dag(spec, release_dag_id(spec), "@continuous",
                   f"Release every tier of feed {spec.feed} when a release is due (deferrable).",
                   is_paused_upon_creation, default_args) as dag:
        # deferrable unless asked otherwise, whatever [operators] default_deferrable says: a
        # continuous DAG whose task did not wait for the due moment would release in a loop.
        operator_options.setdefault("deferrable", True)
        WaterlineReleaseOperator(task_id="release", spec=spec, waterline_conn_id=waterline_conn_id, **operator_options)
    return dag


def maintain_dag(
    spec: FeedSpec,
    *,
    is_paused_upon_creation: bool | None = None,
    default_args: dict[str, Any] | None = None,
    waterline_conn_id: str | None = WaterlineHook.default_conn_name,
) -> DAG:
    """``<feed>_maintain``: every ``maintenance.every``, one task maintaining the feed's tables."""
    with _maintenance_cron_dag(spec, maintain_dag_id(spec),
                               f"Compact, vacuum, checkpoint and clean feed {spec.feed}'s tables.",
                               is_paused_upon_creation, default_args) as dag:
        WaterlineMaintainOperator(task_id="maintain", spec=spec, waterline_conn_id=waterline_conn_id)
    return dag


def audit_dag(
    spec: FeedSpec,
    *,
    is_paused_upon_creation: bool | None = None,
    default_args: dict[str, Any] | None = None,
    waterline_conn_id: str | None = WaterlineHook.default_conn_name,
) -> DAG:
    """``<feed>_audit``: every ``maintenance.every``, one task proving the releases since its last run."""
    with _maintenance_cron_dag(spec, audit_dag_id(spec),
                               f"Prove feed {spec.feed}'s releases since the last audit were on time.",
                               is_paused_upon_creation, default_args) as dag:
        WaterlineAuditOperator(task_id="audit", spec=spec, waterline_conn_id=waterline_conn_id)
    return dag


def apply_dag(
    spec: FeedSpec,
    *,
    default_args: dict[str, Any] | None = None,
    waterline_conn_id: str | None = WaterlineHook.default_conn_name,
) -> DAG:
    """``<feed>_apply``: triggered by hand (no schedule), one task applying the deployed spec.
    Never paused at creation: a paused DAG's manual runs wait, and an apply is asked for now.
    A busy lease is retried like any task's: applying twice records one version."""
    with _feed_dag(spec, apply_dag_id(spec), None, f"Apply the deployed spec of feed {spec.feed} (waterline apply).",
                   False, default_args) as dag:
        WaterlineApplyOperator(task_id="apply", spec=spec, waterline_conn_id=waterline_conn_id)
    return dag


def _maintenance_cron_dag(spec: FeedSpec, dag_id: str, description: str, is_paused_upon_creation: bool | None,
                          default_args: dict[str, Any] | None) -> DAG:
    """A DAG of the feed's on the cron of the spec's ``maintenance.every`` (the caller adds its task)."""
    return _feed_dag(spec, dag_id, CronTriggerTimetable(spec.maintenance.cron, timezone="UTC"), description,
                     is_paused_upon_creation, default_args)


def _feed_dag(spec: FeedSpec, dag_id: str, schedule: Any, description: str, is_paused_upon_creation: bool | None,
              default_args: dict[str, Any] | None) -> DAG:
    """A DAG of the feed's that runs one at a time, with no catch-up, from 2020."""
    return DAG(
        dag_id=dag_id,
        description=description,
        schedule=schedule,
        start_date=datetime(2020, 1, 1, tzinfo=UTC),
        catchup=False,
        max_active_runs=1,
        tags=[*TAGS, spec.feed],
        default_args={**DEFAULT_ARGS, **(default_args or {})},
        is_paused_upon_creation=is_paused_upon_creation,
        doc_md=_doc(spec),
    )


def _doc(spec: FeedSpec) -> str:
    tiers = "\n".join(f"- `{tier}`: `{policy}`" for tier, policy in spec.tiers.items())
    return (f"{spec.description or ''}\n\nFeed `{spec.feed}` ({spec.origin}), partitions "
            f"{spec.partitions.kind}. Tiers:\n{tiers}\n")
