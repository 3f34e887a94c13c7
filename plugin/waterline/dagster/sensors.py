"""The release sensor: starts a release run when `waterline.Feed.due` says one is due.

A tick asks `waterline.Feed.due` (the one "is a release due?" decision, which the Airflow
trigger asks too); it reads the held and tier tables' latest waterline states with the
``deltalake`` package: no Spark, no JVM, no pyspark import. The sensor only turns that
decision into Dagster terms: when a run is due it requests one run of ``<feed>_release``
whose ``run_key`` is the decision's `waterline.DueMoments.run_key`
(``<feed>:<seq>:<due moment µs>``), so one due moment launches one run however many ticks
see it before the release lands. A due moment within ``release_lead_seconds`` (clock mode)
is requested ahead: the run waits for it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from dagster import DefaultSensorStatus, RunRequest, RunsFilter, SensorEvaluationContext, SkipReason, sensor

from waterline.clock import Clock
from waterline.engine.core.due import DueMoments
from waterline.errors import SpecNotApplied
from waterline.feed import Feed
from waterline.spec import FeedSpec

if TYPE_CHECKING:
    from waterline.engine.core.status import FeedStatus


def release_job_name(spec: FeedSpec) -> str:
    return f"{spec.feed}_release"


def release_sensor_name(spec: FeedSpec) -> str:
    return f"{spec.feed}_release_sensor"


IN_FLIGHT = ("NOT_STARTED", "QUEUED", "STARTING", "STARTED", "CANCELING", "MANAGED")
FAILED = ("FAILURE", "CANCELED")
#: Run tag naming the due moment (µs) the release run is for; the run waits for it when it is ahead.
DUE_TAG = "waterline/due_us"


def decide(spec: FeedSpec, due: DueMoments | FeedStatus, cursor: dict,
           last_run_status: str | None = None) -> RunRequest | SkipReason:
    """The sensor's decision for one `Feed.due` answer (pure; no I/O). A `FeedStatus` is
    taken as the answer `Feed.due` gives for it (`DueMoments.of`).

    ``cursor`` holds the last requested ``run_key`` and the ``due_key`` it was
    for; ``last_run_status`` is that run's Dagster status name when known.
    While that run is in flight nothing more is requested (a release that has
    committed some tiers but not yet others must not look like a new due
    moment). A due moment gets one run; if that run failed or was canceled it
    gets one more, keyed ``<due_key>:retry<n>``.
    """
    due = _moments(spec, due)
    key = due.run_key
    if key is None:
        return SkipReason(due.reason)
    last = cursor.get("run_key")
    if last and last_run_status in IN_FLIGHT:
        return SkipReason(f"release run for {last} is {last_run_status.lower()}; waiting for it to land")
    run_key = key
    if cursor.get("due_key") == key:
        if last_run_status not in FAILED:
            return SkipReason(f"release already requested for this due moment (run_key {last}); waiting for it to land")
        run_key = f"{key}:retry{int(cursor.get('retries', 0)) + 1}"
    return RunRequest(
        run_key=run_key,
        tags={
            "waterline/feed": spec.feed, "waterline/seq": str(due.status.seq), "waterline/due": due.run_for_text,
            DUE_TAG: str(due.run_for_us),
        },
    )


def due_key(spec: FeedSpec, state: FeedStatus) -> str | None:
    """``<feed>:<seq>:<next_due_us>`` naming the moment a release is due now, None when none is."""
    due = DueMoments.of(spec, state)
    return due.key_of(due.due_us)


def armed_key(spec: FeedSpec, state: FeedStatus) -> str | None:
    """The due-moment key of a release to pre-arm now (`DueMoments.armed_us`), None when none
    is within the lead time."""
    due = DueMoments.of(spec, state)
    return due.key_of(due.armed_us)


def _moments(spec: FeedSpec, due: DueMoments | FeedStatus) -> DueMoments:
    return due if isinstance(due, DueMoments) else DueMoments.of(spec, due)


def build_release_sensor(
    spec: FeedSpec,
    *,
    job=None,
    default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
    clock: Clock | None = None,
):
    """``<feed>_release_sensor``: one RunRequest of ``<feed>_release`` per due moment."""
    feed = Feed(spec, clock=clock)  # its due() reads Delta logs only: a tick never starts Spark
    target = {"job": job} if job is not None else {"job_name": release_job_name(spec)}

    @sensor(
        name=release_sensor_name(spec),
        minimum_interval_seconds=int(spec.release_interval_seconds),
        default_status=default_status,
        description=(
            f"Launches {release_job_name(spec)} when a release would change a tier of feed "
            f"{spec.feed}. Reads Delta commit metadata only (no Spark)."
        ),
        **target,
    )
    def _release_sensor(context: SensorEvaluationContext):
        cursor = _load_cursor(context.cursor)
        try:
            due = feed.due()
        except SpecNotApplied as exc:  # a spec edited but not applied: no run until `waterline apply`
            return SkipReason(f"spec not applied: {exc}")
        key = due.run_key
        status = _run_status(context, cursor.get("run_key")) if key is not None else None
        decision = decide(spec, due, cursor, status)
        if isinstance(decision, RunRequest):
            retries = int(cursor.get("retries", 0)) + 1 if key == cursor.get("due_key") else 0
            context.update_cursor(json.dumps(
                {"run_key": decision.run_key, "due_key": key, "seq": due.status.seq, "retries": retries},
                sort_keys=True,
            ))
        return decision

    return _release_sensor


def _run_status(context: SensorEvaluationContext, run_key: str | None) -> str | None:
    """Status name of the newest run this sensor launched for ``run_key`` (None: unknown)."""
    if not run_key or context.instance_ref is None:
        return None
    runs = context.instance.get_runs(
        filters=RunsFilter(tags={"dagster/run_key": run_key, "dagster/sensor_name": context.sensor_name}), limit=1
    ) if context.sensor_name else context.instance.get_runs(
        filters=RunsFilter(tags={"dagster/run_key": run_key}), limit=1
    )
    return runs[0].status.value if runs else None


def _load_cursor(raw: str | None) -> dict:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
