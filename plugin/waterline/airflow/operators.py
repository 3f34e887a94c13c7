"""Airflow operators over `waterline.Feed`: ingest partitions, release tiers, maintain tables,
prove releases were on time, apply a changed spec.

Thin adapters: a `WaterlineHook` hands each task a `Feed` (Spark settings from
the ``waterline`` connection, the spec's ``spark:`` key and the environment),
the `Feed` does the work the CLI and the Dagster assets do, and the task log
gets waterline's lines. Each task process starts its own Spark session, once,
with the JVM's own output in its log file. Errors (`waterline.airflow.errors`):
a transient one (the feed lease busy or lost, a commit race lost) lets the
task's ``retries`` run; any other `WaterlineError` fails the task at once,
without retries, with the CLI's one-line message.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.configuration import conf
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from waterline.airflow.assets import held_asset, tier_asset, tier_assets
from waterline.airflow.errors import airflow_failures
from waterline.airflow.hooks import WaterlineHook
from waterline.airflow.partitions import partitions_for_run
from waterline.airflow.triggers import ARMED, DUE, IDLE, WaterlineDueTrigger
from waterline.clock import format_instant
from waterline.engine.core.due import DueMoments, arming_line
from waterline.engine.core.results import TierProof
from waterline.errors import SpecNotApplied, WaterlineError
from waterline.feed import Feed, end_within_grace
from waterline.spec import FeedSpec


class _FeedOperator(BaseOperator):
    """Holds the feed spec (the task rebuilds nothing: Airflow re-parses the DAG file) and
    the connection id; `get_feed` is the task's `Feed`."""

    ui_color = "#d6ecf3"

    def __init__(self, *, spec: FeedSpec, waterline_conn_id: str | None = WaterlineHook.default_conn_name,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.waterline_conn_id = waterline_conn_id

    @cached_property
    def hook(self) -> WaterlineHook:
        return WaterlineHook(self.waterline_conn_id)

    def get_feed(self) -> Feed:
        """The task's `Feed` (no Spark yet)."""
        return self.hook.get_feed(self.spec)

    def on_kill(self) -> None:
        """Airflow calls it when the task is killed (SIGTERM), then raises in the task's main
        thread: whatever the step is doing, the task ends within the stop grace (120 s), its
        feed lease given back (`end_within_grace`, as `waterline stream` and `release` do)."""
        end_within_grace(f"feed {self.spec.feed}: task {self.task_id}")

    def _start_spark(self, feed: Feed) -> None:
        """Start the feed's session now, and say where the JVM's own output goes (banner,
        log4j, executors' Java stacks): its log file, not the task log."""
        feed.spark  # noqa: B018  (starts the session)
        if feed.jvm_log is not None:
            self.log.info("Spark: the JVM's own log is %s (WATERLINE_JVM_LOG)", feed.jvm_log)


class WaterlineIngestOperator(_FeedOperator):
    """Ingest partitions of a feed into its held table, one after another, in the order named.

    ``partitions`` (templated) names them: a key or a list of keys. Without it, a
    run's conf ``{"partitions": [...]}`` names them; else a manual run ingests the
    partition containing its logical date, and a scheduled, catch-up or backfill
    run the partitions of its data interval ``[start, end)``: one for a daily
    (hourly) feed on a daily (hourly) schedule, several on a longer one (see
    `waterline.airflow.partitions.partitions_for_run`). A retry re-ingests every
    partition of the run; those already ingested append nothing (identical output).
    """

    template_fields: Sequence[str] = ("partitions",)

    def __init__(self, *, spec: FeedSpec, partitions: str | Sequence[str] | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("outlets", [held_asset(spec)])
        super().__init__(spec=spec, **kwargs)
        self.partitions = partitions

    def execute(self, context: Context) -> list[dict[str, Any]]:
        feed = self.get_feed()
        with airflow_failures(self.log):
            keys = partitions_for_run(self.spec, context, self.partitions)
            self._start_spark(feed)
            done = []
            for key in keys:
                started = time.monotonic()
                result = feed.ingest(key)
                self.log.info("%s in %.1f s", result.summary(), time.monotonic() - started)
                done.append(result.to_dict())
        event = context["outlet_events"][held_asset(self.spec)]
        event.extra = {"feed": self.spec.feed, "partitions": keys,
                       "versions_written": sum(r["versions_written"] for r in done),
                       "seq": max((r["seq"] for r in done if r["seq"] is not None), default=None)}
        return done


class WaterlineStreamOperator(_FeedOperator):
    """Drain what a stream feed's Kafka topics hold now into its held table
    (`waterline.Feed.stream` with ``once=True``): each micro-batch one held commit, exactly
    once, tiers with rows due at once released in the same task. A retry resumes from the
    checkpoint in the warehouse; a batch the held table already has is skipped. The held
    asset's event carries the offsets reached; the task returns the run (XCom)."""

    def __init__(self, *, spec: FeedSpec, **kwargs: Any) -> None:
        kwargs.setdefault("outlets", [held_asset(spec)])
        super().__init__(spec=spec, **kwargs)

    def execute(self, context: Context) -> dict[str, Any]:
        feed = self.get_feed()
        with airflow_failures(self.log):
            self._start_spark(feed)
            run = feed.stream(once=True, on_batch=lambda batch: self.log.info("%s", batch.summary()))
        self.log.info("%s", run.summary())
        applied = [b for b in run.batches if not b.skipped]
        seqs = [b.seq for b in applied if b.seq is not None]
        event = context["outlet_events"][held_asset(self.spec)]
        event.extra = {"feed": self.spec.feed, "offsets": run.offsets, "batches": len(applied),
                       "versions_written": run.versions_written, "seq": max(seqs, default=None)}
        return {"feed": run.feed, "batches": [b.to_dict() for b in run.batches],
                "releases": [r.to_dict() for r in run.releases], "offsets": run.offsets}


class WaterlineMaintainOperator(_FeedOperator):
    """Maintain a feed's tables (`waterline.Feed.maintain`): compact, vacuum, checkpoint and
    clean the log, delete stages that never committed. ``tier``: only that tier (default:
    every tier and the held table). Returns what it did per table (XCom)."""

    template_fields: Sequence[str] = ("tier",)

    def __init__(self, *, spec: FeedSpec, tier: str | None = None, **kwargs: Any) -> None:
        super().__init__(spec=spec, **kwargs)
        self.tier = tier

    def execute(self, context: Context) -> dict[str, Any]:
        feed = self.get_feed()
        with airflow_failures(self.log):
            self._start_spark(feed)
            result = feed.maintain(self.tier)
        for table in result.tables.values():
            self.log.info(table.summary(result.feed))
        return result.to_dict()


class WaterlineAuditOperator(_FeedOperator):
    """Prove the feed's releases were on time (`waterline.Feed.audit_history`, docs/compliance.md).

    Without ``start`` (templated) it proves the commits since the last run of this task (its
    XCom ``proven_through_us``, the trusted clock when that run started; the first run: every
    retained commit), so each commit is proven once. A row released before it was due, or a
    commit the proof could not see, fails the task at once (no retries: a re-run finds the
    same) with one line naming the tiers; the rows are in the task log.
    """

    template_fields: Sequence[str] = ("start", "end", "tier")

    def __init__(self, *, spec: FeedSpec, start: str | None = None, end: str | None = None, tier: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(spec=spec, **kwargs)
        self.start, self.end, self.tier = start, end, tier

    def execute(self, context: Context) -> dict[str, Any]:
        feed = self.get_feed()
        with airflow_failures(self.log):
            end = self.end if self.end is not None else feed.clock.now_us()
            start = self.start if self.start is not None else _proven_through(context, self.task_id)
            self._start_spark(feed)
            proofs = feed.audit_history(start, end, tiers=None if self.tier is None else [self.tier])
        for line in proof_lines(feed.name, proofs):
            self.log.info("%s", line)
        if self.end is None:
            context["ti"].xcom_push(key=PROVEN_THROUGH, value=end)
        if failure := audit_failure(feed.name, proofs):
            raise AirflowFailException(failure)
        return {tier: {"commits": len(p.releases), "breaches": p.breach_count, "unproven": len(p.unproven)}
                for tier, p in proofs.items()}


PROVEN_THROUGH = "proven_through_us"


def _proven_through(context: Context, task_id: str) -> int | None:
    """Where this task's last run ended: the newest ``proven_through_us`` of its earlier runs."""
    pulled = context["ti"].xcom_pull(task_ids=task_id, key=PROVEN_THROUGH, include_prior_dates=True)
    values = [v for v in (pulled if isinstance(pulled, list) else [pulled]) if isinstance(v, int)]
    return max(values, default=None)


def proof_lines(feed: str, proofs: Mapping[str, TierProof]) -> list[str]:
    """The task log's account of a proof: a line per tier, then each breach and unproven range."""
    lines = []
    for tier, p in proofs.items():
        least = "none" if p.least_margin_us is None else f"{p.least_margin_us / 1e6:.3f} s"
        lines.append(f"audit {feed}/{tier}: {len(p.releases)} commits, {p.rows_released} rows released, "
                     f"least margin {least}, {p.breach_count} breaches" + ("" if p.exists else " (no table yet)"))
        lines += [f"BREACH {feed}/{tier} v{b.version} {b.change} {b.key} (seq {b.seq}): due {_instant(b.due_us)}, "
                  f"committed before {_instant(b.committed_us)}" for b in p.breaches]
        lines += [f"not proven {feed}/{tier} versions {a}-{b}: {why}" for a, b, why in p.unproven]
    return lines


def audit_failure(feed: str, proofs: Mapping[str, TierProof]) -> str | None:
    """The task's one-line failure for a proof that is not clean (None when it is)."""
    early = {t: p.breach_count for t, p in proofs.items() if p.breach_count}
    unseen = [t for t, p in proofs.items() if p.unproven]
    parts = [f"{n} row(s) of tier {t} released before they were due" for t, n in early.items()]
    parts += [f"tier {t} has commits the proof could not see" for t in unseen]
    return f"audit {feed}: " + "; ".join(parts) + " (see the task log)" if parts else None


class WaterlineApplyOperator(_FeedOperator):
    """Make the spec the feed's applied spec (`waterline.Feed.apply`, docs/operations.md), under
    the feed lease. Retiring a tier or adding a column needs no Spark; a tier added or a policy
    changed starts it (held rescheduled, the new tier built at the feed's W), the JVM's own
    output in its log file. Returns the spec version in force after it and what changed
    (XCom); a refused change fails the task in one line."""

    def execute(self, context: Context) -> dict[str, Any]:
        feed = self.get_feed()
        with airflow_failures(self.log):
            applied, diff = feed.apply()
        if feed.jvm_log is not None:
            self.log.info("Spark: the JVM's own log is %s (WATERLINE_JVM_LOG)", feed.jvm_log)
        changes = diff.lines()
        self.log.info("feed %s: spec version %s %s", feed.name, applied.version,
                      f"applied: {'; '.join(changes)}" if changes else "in force, nothing to apply")
        return {"feed": feed.name, "version": applied.version, "hash": applied.hash, "changes": changes}


class WaterlineReleaseOperator(_FeedOperator):
    """Release every tier of a feed not on hold, when a release is due.

    With ``deferrable`` the task asks `Feed.due` first (Delta logs only, no Spark):
    due now, it releases; due within ``release_lead_seconds``, it starts Spark and
    waits on the trusted clock for the moment; otherwise it defers to
    `WaterlineDueTrigger` and frees its worker slot until then. With
    ``deferrable=False`` it releases to the clock at once, due or not. Unset, it
    follows Airflow's ``[operators] default_deferrable`` (False unless set), as
    Airflow's own operators do; the release DAG of `dags_from_specs` sets True.

    Every tier is an outlet: a successful release emits one asset event per
    tier whose ``extra`` carries W_T (``w_us``, ``w``) and what changed.
    """

    def __init__(
        self,
        *,
        spec: FeedSpec,
        deferrable: bool | None = None,
        poll_seconds: float | None = None,
        idle_seconds: float | None = 3600.0,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("outlets", tier_assets(spec))
        super().__init__(spec=spec, **kwargs)
        self.deferrable = default_deferrable() if deferrable is None else deferrable
        self.poll_seconds = poll_seconds
        self.idle_seconds = idle_seconds

    def execute(self, context: Context) -> dict[str, Any]:
        feed = self.get_feed()
        if not self.deferrable:
            with airflow_failures(self.log):
                if feed.status().seq == 0:
                    raise WaterlineError(f"feed {feed.name}: nothing ingested yet; run an ingest first")
            return self._release(context, feed, None)
        with airflow_failures(self.log):
            due = _due(feed, self.log)
        if due is not None and due.run_for_us is not None:
            return self._release(context, feed, due.run_for_us)
        self.defer(
            trigger=WaterlineDueTrigger(self.spec.to_dict(), base_dir=_base_dir(self.spec),
                                        poll_seconds=self.poll_seconds, idle_seconds=self.idle_seconds),
            method_name="execute_complete",
        )

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        status = event.get("status")
        if status == IDLE:
            raise AirflowSkipException(f"feed {self.spec.feed}: {event.get('reason', 'nothing due')}")
        if status not in (DUE, ARMED):
            raise AirflowFailException(f"feed {self.spec.feed}: unexpected trigger event {event!r}")
        return self._release(context, self.get_feed(), event.get("due_us"))

    def _release(self, context: Context, feed: Feed, due_us: int | None) -> dict[str, Any]:
        with airflow_failures(self.log):
            self._start_spark(feed)
            if line := arming_line(feed.name, due_us, feed.clock.now_us()):
                self.log.info("%s", line)
            started = time.monotonic()
            run = feed.release_run(due_us)
        seconds = time.monotonic() - started
        for moment, lag in run.lags:
            self.log.info("%s: released %.3f s after the due moment %s", feed.name, lag / 1e6, format_instant(moment))
        for tier, result in run.result.tiers.items():
            self.log.info("%s", result.summary(feed.name))
            context["outlet_events"][tier_asset(self.spec, tier)].extra = {
                "feed": feed.name, "tier": tier, "w_us": result.w_us, "w": _instant(result.w_us),
                "previous_w_us": result.previous_w_us, "seq": result.seq, "changed": result.changed,
                "released": result.released, "updated": result.updated, "removed": result.removed,
                "expired": result.expired, "held": result.held, "seconds": round(seconds, 3),
            }
        return run.result.to_dict() | {"lags_seconds": [round(lag / 1e6, 3) for _, lag in run.lags]}


def default_deferrable() -> bool:
    """Airflow's ``[operators] default_deferrable``, read when an operator is made (a DAG file
    parses), so ``AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE`` of the parsing process counts."""
    return conf.getboolean("operators", "default_deferrable", fallback=False)


def _due(feed: Feed, log: Any) -> DueMoments | None:
    """`Feed.due`, or None for a spec changed but not applied: the trigger then waits for the
    apply (idle, the task skips with ``spec not applied: ...``)."""
    try:
        return feed.due()
    except SpecNotApplied as exc:
        log.warning("spec not applied: %s (waiting for it to be applied)", exc)
        return None


def _base_dir(spec: FeedSpec) -> str | None:
    return None if spec.base_dir is None else str(spec.base_dir)


def _instant(us: int | None) -> str:
    return "none" if us is None else format_instant(us)


__all__ = ["WaterlineApplyOperator", "WaterlineAuditOperator", "default_deferrable", "WaterlineIngestOperator",
           "WaterlineMaintainOperator", "WaterlineReleaseOperator"]
