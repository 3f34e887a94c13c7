"""The release sensor: decides from Delta commit metadata alone whether a release is due.

A tick asks `waterline.Feed.due`, which reads the held and tier tables' latest
waterline states with the ``deltalake`` package: no Spark, no JVM, no pyspark import. When something is due it requests one run of
``<feed>_release`` whose ``run_key`` names the due moment
(``<feed>:<seq>:<next_due_us>``), so one due moment launches one run however
many ticks see it before the release lands. A due moment within
``release_lead_seconds`` (clock mode) is requested ahead: the run waits for it.
"""

from __future__ import annotations

import json

from dagster import DefaultSensorStatus, RunRequest, RunsFilter, SensorEvaluationContext, SkipReason, sensor

from waterline.clock import Clock, format_instant
from waterline.engine.core.due import armed_due_us, due_now_us, nothing_due_reason
from waterline.engine.core.status import FeedStatus
from waterline.feed import Feed
from waterline.semantics import NEG_INF
from waterline.spec import FeedSpec


def release_job_name(spec: FeedSpec) -> str:
    return f"{spec.feed}_release"


def release_sensor_name(spec: FeedSpec) -> str:
    return f"{spec.feed}_release_sensor"


IN_FLIGHT = ("NOT_STARTED", "QUEUED", "STARTING", "STARTED", "CANCELING", "MANAGED")
FAILED = ("FAILURE", "CANCELED")
#: Run tag naming the due moment (µs) the release run is for; the run waits for it when it is ahead.
DUE_TAG = "waterline/due_us"


def decide(spec: FeedSpec, state: FeedStatus, cursor: dict, last_run_status: str | None = None) -> RunRequest | SkipReason:
    """The sensor's decision for one observed state (pure; no I/O).

    ``cursor`` holds the last requested ``run_key`` and the ``due_key`` it was
    for; ``last_run_status`` is that run's Dagster status name when known.
    While that run is in flight nothing more is requested (a release that has
    committed some tiers but not yet others must not look like a new due
    moment). A due moment gets one run; if that run failed or was canceled it
    gets one more, keyed ``<due_key>:retry<n>``.
    """
    key = due_key(spec, state) or armed_key(spec, state)
    if key is None:
        return SkipReason(nothing_due_reason(state))
    last = cursor.get("run_key")
    if last and last_run_status in IN_FLIGHT:
        return SkipReason(f"release run for {last} is {last_run_status.lower()}; waiting for it to land")
    run_key = key
    if cursor.get("due_key") == key:
        if last_run_status not in FAILED:
            return SkipReason(f"release already requested for this due moment (run_key {last}); waiting for it to land")
        run_key = f"{key}:retry{int(cursor.get('retries', 0)) + 1}"
    next_due = int(key.rsplit(":", 1)[1])
    when = "now" if next_due <= NEG_INF else format_instant(next_due)
    return RunRequest(
        run_key=run_key,
        tags={
            "waterline/feed": spec.feed, "waterline/seq": str(state.seq), "waterline/due": when,
            DUE_TAG: str(next_due),
        },
    )


def due_key(spec: FeedSpec, state: FeedStatus) -> str | None:
    """``<feed>:<seq>:<next_due_us>`` naming the current due moment, None when nothing is due."""
    due = due_now_us(state)
    return None if due is None else f"{spec.feed}:{state.seq}:{due}"


def armed_key(spec: FeedSpec, state: FeedStatus) -> str | None:
    """The due-moment key of a release to pre-arm now (`waterline.engine.core.due.armed_due_us`),
    None when none is within the lead time."""
    due = armed_due_us(spec, state)
    return None if due is None else f"{spec.feed}:{state.seq}:{due}"


def build_release_sensor(
    spec: FeedSpec,
    *,
    job=None,
    default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
    clock: Clock | None = None,
):
    """``<feed>_release_sensor``: one RunRequest of ``<feed>_release`` per due moment."""
    feed = Feed(spec, clock=clock)  # its status() reads Delta logs only: a tick never starts Spark
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
        state = feed.status()
        key = due_key(spec, state) or armed_key(spec, state)
        status = _run_status(context, cursor.get("run_key")) if key is not None else None
        decision = decide(spec, state, cursor, status)
        if isinstance(decision, RunRequest):
            retries = int(cursor.get("retries", 0)) + 1 if key == cursor.get("due_key") else 0
            context.update_cursor(json.dumps(
                {"run_key": decision.run_key, "due_key": key, "seq": state.seq, "retries": retries},
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
