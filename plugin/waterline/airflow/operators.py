"""Airflow operators over the waterline engine: ingest partitions, release tiers.

Each task process starts its own Spark session (the spec's ``spark:`` key,
overridden by ``WATERLINE_SPARK_MASTER``/``_REMOTE`` as everywhere), runs the
same engine functions as the CLI and the Dagster assets, and logs through the
task log. A `WaterlineError` (bad input, a feed's transform failing on its
data) fails the task at once, without retries, with the CLI's one-line message.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from waterline.airflow.assets import held_asset, tier_asset, tier_assets
from waterline.airflow.triggers import ARMED, DUE, IDLE, WaterlineDueTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context

    from waterline.spec import FeedSpec


class _FeedOperator(BaseOperator):
    """Holds the feed spec; the task rebuilds nothing: Airflow re-parses the DAG file."""

    ui_color = "#d6ecf3"

    def __init__(self, *, spec: "FeedSpec", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec

    def _spark(self):
        """The feed's session. The task log gets waterline's lines and a failure's one line;
        the JVM's own output (banner, log4j, executors' Java stacks) goes to its log file,
        and PySpark's JSON copy of each SQL error is off."""
        from waterline.engine.jvm_log import quiet_session

        session, jvm_log = quiet_session(self.spec.spark)
        if jvm_log is not None:
            self.log.info("Spark: the JVM's own log is %s (WATERLINE_JVM_LOG)", jvm_log)
        return session

    @contextmanager
    def _one_line_failure(self) -> Iterator[None]:
        from waterline.errors import WaterlineError

        try:
            yield
        except WaterlineError as err:
            self.log.error("%s", err)
            raise AirflowFailException(str(err)) from None


class WaterlineIngestOperator(_FeedOperator):
    """Ingest partitions of a feed into its held table, one after another, in the order named.

    ``partitions`` (templated) names them: a key or a list of keys. Without it, a
    run's conf ``{"partitions": [...]}`` names them; else a manual run ingests the
    partition containing its logical date, and a scheduled, catch-up or backfill
    run the partitions of its data interval ``[start, end)``: one for a daily
    (hourly) feed on a daily (hourly) schedule, several on a longer one.
    """

    template_fields: Sequence[str] = ("partitions",)

    def __init__(self, *, spec: "FeedSpec", partitions: str | Sequence[str] | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("outlets", [held_asset(spec)])
        super().__init__(spec=spec, **kwargs)
        self.partitions = partitions

    def execute(self, context: "Context") -> list[dict[str, Any]]:
        from waterline.engine.ingest import ingest

        with self._one_line_failure():
            keys = self._keys(context)
            spark = self._spark()
            done = []
            for key in keys:
                started = time.monotonic()
                result = ingest(spark, self.spec, key)
                self.log.info("%s in %.1f s", result.summary(), time.monotonic() - started)
                done.append(result.to_dict())
        event = context["outlet_events"][held_asset(self.spec)]
        event.extra = {"feed": self.spec.feed, "partitions": keys,
                       "versions_written": sum(r["versions_written"] for r in done),
                       "seq": max((r["seq"] for r in done if r["seq"] is not None), default=None)}
        return done

    def _keys(self, context: "Context") -> list[str]:
        from waterline.errors import WaterlineError

        scheme = self.spec.partitions
        conf = getattr(context.get("dag_run"), "conf", None) or {}
        wanted = self.partitions if self.partitions is not None else conf.get("partitions")
        if isinstance(wanted, str):
            wanted = [wanted]
        if wanted:
            keys = []
            for key in wanted:
                try:
                    keys.append(scheme.validate(str(key)))
                except WaterlineError as exc:
                    raise WaterlineError(f"partitions: {exc}") from None
            return sorted(set(keys), key=keys.index)
        dag_run = context.get("dag_run")
        logical = context.get("logical_date")
        run_type = getattr(dag_run, "run_type", None)
        if getattr(run_type, "value", run_type) == "manual" and logical is not None:
            # A manual run (Trigger in the UI, `airflow dags trigger`/`test`) names its partition
            # by its logical date; Airflow's inferred interval for it would be the one before.
            return partitions_in_interval(self.spec, logical, logical)
        start, end = context.get("data_interval_start"), context.get("data_interval_end")
        if start is None or end is None:
            raise WaterlineError(
                f"feed {self.spec.feed}: no partitions given and the run has no data interval or logical date; "
                "pass partitions=... or the run conf {\"partitions\": [...]}")
        return partitions_in_interval(self.spec, start, end)


def partitions_in_interval(spec: "FeedSpec", start: datetime, end: datetime) -> list[str]:
    """The daily/hourly partition keys whose period starts in ``[start, end)`` (UTC);
    an empty interval (a manual run) means the partition containing ``start``."""
    from waterline.errors import WaterlineError

    scheme = spec.partitions
    if scheme.kind == "static":
        raise WaterlineError(
            f"feed {spec.feed}: static partitions do not follow time; pass partitions=... or the run conf "
            f"{{\"partitions\": [...]}} (one of {list(scheme.values)})")
    step = timedelta(days=1) if scheme.kind == "daily" else timedelta(hours=1)
    start_utc, end_utc = _utc_naive(start), _utc_naive(end)
    first = datetime.strptime(scheme.key_for(start_utc), "%Y-%m-%d" if scheme.kind == "daily" else "%Y-%m-%d-%H:%M")
    if first < start_utc:
        first += step
    keys = []
    moment = first
    while moment < end_utc:
        keys.append(scheme.validate(scheme.key_for(moment)))
        moment += step
    return keys or [scheme.validate(scheme.key_for(start_utc))]


def _utc_naive(moment: datetime) -> datetime:
    from datetime import timezone

    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment


class WaterlineReleaseOperator(_FeedOperator):
    """Release every tier of a feed not on hold, when a release is due.

    With ``deferrable`` (the default) the task looks at the commit state first
    (no Spark): due now, it releases; due within ``release_lead_seconds``, it
    starts Spark and waits on the trusted clock for the moment; otherwise it
    defers to `WaterlineDueTrigger` and frees its worker slot until then. With
    ``deferrable=False`` it releases to the clock at once, due or not.

    Every tier is an outlet: a successful release emits one asset event per
    tier whose ``extra`` carries W_T (``w_us``, ``w``) and what changed.
    """

    def __init__(
        self,
        *,
        spec: "FeedSpec",
        deferrable: bool = True,
        poll_seconds: float | None = None,
        idle_seconds: float | None = 3600.0,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("outlets", tier_assets(spec))
        super().__init__(spec=spec, **kwargs)
        self.deferrable = deferrable
        self.poll_seconds = poll_seconds
        self.idle_seconds = idle_seconds

    def execute(self, context: "Context") -> dict[str, Any]:
        from waterline.engine.commits import table_exists
        from waterline.engine.due import armed_due_us, due_now_us
        from waterline.engine.state import read_feed_state

        if not self.deferrable:
            with self._one_line_failure():
                if not table_exists(self.spec.held_path):
                    from waterline.errors import WaterlineError

                    raise WaterlineError(f"feed {self.spec.feed}: nothing ingested yet; run an ingest first")
            return self._release(context, None)
        state = read_feed_state(self.spec)
        due = due_now_us(state)
        if due is None:
            due = armed_due_us(self.spec, state)
        if due is not None:
            return self._release(context, due)
        self.defer(
            trigger=WaterlineDueTrigger(self.spec.to_dict(), base_dir=_base_dir(self.spec),
                                        poll_seconds=self.poll_seconds, idle_seconds=self.idle_seconds),
            method_name="execute_complete",
        )

    def execute_complete(self, context: "Context", event: dict[str, Any]) -> dict[str, Any]:
        status = event.get("status")
        if status == IDLE:
            raise AirflowSkipException(f"feed {self.spec.feed}: {event.get('reason', 'nothing due')}")
        if status not in (DUE, ARMED):
            raise AirflowFailException(f"feed {self.spec.feed}: unexpected trigger event {event!r}")
        return self._release(context, event.get("due_us"))

    def _release(self, context: "Context", due_us: int | None) -> dict[str, Any]:
        from waterline.clock import SystemClock, format_instant
        from waterline.engine.prearmed import arming_line, release_run

        clock = SystemClock()
        spark = self._spark()
        if line := arming_line(self.spec.feed, due_us, clock.now_us()):
            self.log.info("%s", line)
        started = time.monotonic()
        with self._one_line_failure():
            run = release_run(spark, self.spec, due_us=due_us, clock=clock)
        seconds = time.monotonic() - started
        for moment, lag in run.lags:
            self.log.info("%s: released %.3f s after the due moment %s", self.spec.feed, lag / 1e6,
                          format_instant(moment))
        for tier, result in run.result.tiers.items():
            self.log.info("%s", result.summary(self.spec.feed))
            context["outlet_events"][tier_asset(self.spec, tier)].extra = {
                "feed": self.spec.feed, "tier": tier, "w_us": result.w_us, "w": _instant(result.w_us),
                "previous_w_us": result.previous_w_us, "seq": result.seq, "changed": result.changed,
                "released": result.released, "updated": result.updated, "removed": result.removed,
                "expired": result.expired, "held": result.held, "seconds": round(seconds, 3),
            }
        return run.result.to_dict() | {"lags_seconds": [round(lag / 1e6, 3) for _, lag in run.lags]}


def _base_dir(spec: "FeedSpec") -> str | None:
    return None if spec.base_dir is None else str(spec.base_dir)


def _instant(us: int | None) -> str:
    from waterline.clock import format_instant

    return "none" if us is None else format_instant(us)
