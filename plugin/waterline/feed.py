"""`waterline.Feed`: one feed, its tables, and everything a user does with them.

    import waterline
    feed = waterline.load("feeds/ticks.yaml")
    feed.ingest("2026-01-05")          # Spark starts here, not before
    feed.release()
    feed.read("delayed_15m")           # a pyarrow Table, read with deltalake
    feed.status()                      # per tier: W_T, lag, pending, next due

The CLI, the Dagster assets, sensor and checks, the Airflow operators and
trigger, and notebooks all go through this class, so they cannot drift apart.
Methods that only read Delta logs (`plan`, `status`, `due`, `read`) never
start a JVM nor import pyspark; the others start Spark lazily, once, from the
spec's ``spark:`` key (``WATERLINE_SPARK_MASTER``/``_REMOTE`` override it) or
from the ``spark`` argument.

A `Feed` is a context manager: ``with waterline.load(path) as feed:`` stops, on the way
out, the Spark session this feed started (never one it was handed or found running).

Argument names keep one meaning across the methods: ``as_of`` is always an instant on the
waterline's axis (`release` brings the tiers to it; `read` shows a tier as it was when its
W_T was there, so after ``release(as_of=t)``, ``read(tier, as_of=t)`` is what that release
published); durations (``max_wait``) are seconds (int or float), a `timedelta` or duration
text; table versions are ``version``/``since``.

Over 400 lines, for a reason: `Feed` is the whole public API in one class (DESIGN's public
names): 33 public methods and properties, near a third of the file their docstrings, each a door of a few
lines to the engine (`engine.operations`) or to the feed's tables (`engine.tables.feed_tables`),
where the work is. Splitting the class would split the one API the adapters share.
"""

from __future__ import annotations

import sys
import threading
import warnings
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa
from tqdm import tqdm

from waterline.clock import Clock, SystemClock, duration_us, format_instant, parse_duration, parse_instant, to_us
from waterline.engine.core.due import DueMoments
from waterline.engine.core.results import (
    FeedPlan, GcResult, IngestResult, MaintainResult, ReleaseResult, TableSummary, TierAudit, TierProof,
    WaterlineHistory,
)
from waterline.engine.core.runs import ReleaseRun, StreamRun
from waterline.engine.core.state import TierState
from waterline.engine.core.status import FeedStatus
# Where a feed's Spark runs: the settings adapters (a Dagster resource, an Airflow connection) hand to Feed.
from waterline.engine.spark.config import SessionConfig, SparkSettings, check_master, check_remote
from waterline.engine.tables import applied_spec, change_counts
from waterline.engine.tables.status import read_feed_status, waterline_history
from waterline.engine.tables.stopping import Stopped, end_within_grace, exit_code, stop_on_signals, stop_told
from waterline.engine.tables.feed_tables import FeedTables, row_count
from waterline.errors import WaterlineError
from waterline.policy import compile_policy
from waterline.spec import FeedSpec, load_spec
from waterline.spec.columns import output_columns
from waterline.spec.output_checks import check_policies

if TYPE_CHECKING:  # the engine's Spark-running types, for annotations only: importing it loads pyspark
    from pyspark.sql import SparkSession

    from waterline.engine.core.results import StreamBatchResult

Instant = int | str | datetime
"""An instant: µs since the epoch (UTC), an ISO-8601 text (``2026-01-05T13:30:00Z``, ``now - 5m``) or a datetime."""

Duration = int | float | str | timedelta
"""A duration: seconds (int or float), a `timedelta`, or text (``"90 seconds"``, ``"5 minutes"``, ``"PT5M"``)."""


def load(path: str | Path, *, warehouse: str | Path | None = None, spark: Any = None,
         clock: Clock | None = None, base_dir: str | Path | None = None, quiet: bool = True) -> "Feed":
    """The feed of the spec YAML at ``path``.

    ``warehouse`` replaces the spec's (relative paths resolve against ``base_dir``,
    default the working directory). ``spark`` is a running `SparkSession`, a master
    URL (``local[4]``, ``spark://host:7077``) or a Spark Connect URL (``sc://host:15002``);
    None follows the spec's ``spark:`` key and the environment. ``clock`` is the
    trusted clock (default: the system's UTC clock). ``quiet``: see `Feed`.
    """
    overrides = {"warehouse": str(warehouse)} if warehouse is not None else None
    return Feed(load_spec(path, base_dir=base_dir, overrides=overrides), spark=spark, clock=clock, quiet=quiet)


def _spark_room():
    """The engine's operations (engine.operations). Imported on the first operation that needs Spark only:
    it loads pyspark, which the JVM-free methods (and the sensor and trigger) must not."""
    from waterline.engine import operations  # lazy: loads pyspark (see the docstring)

    return operations


class Feed:
    """A feed: its validated spec, its Delta tables and the operations on them.

    :param spec: the feed spec (see `waterline.spec`; `load` reads one from YAML).
    :param spark: a running session, a master or ``sc://`` URL, a `SessionConfig`,
        or None (the spec's ``spark:`` key, overridden by the environment).
    :param clock: the trusted clock; releases never go past it.
    :param quiet: a JVM this feed starts writes its own output to a log file
        (`waterline.engine.spark.jvm_log`), not to this process's stderr.
    """

    def __init__(self, spec: FeedSpec, *, spark: Any = None, clock: Clock | None = None,
                 quiet: bool = True) -> None:
        self.spec = spec
        self.clock = clock or SystemClock()
        self.quiet = quiet
        self.jvm_log: Path | None = None
        self._jvm_log_taken = False
        self._session: Any = None
        self._owns_session = False  # this feed started its session: `close` stops it
        self._config: SessionConfig | None = None
        if isinstance(spark, str):  # this feed's Spark, whatever the spec and environment say
            self._config = SessionConfig.resolve(spec.spark, SparkSettings.parse(spark), env=False)
        elif isinstance(spark, SessionConfig):
            self._config = spark
        else:
            self._session = spark

    def __enter__(self) -> "Feed":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the Spark session this feed started, if it did (a session handed to it, or
        one already running in the process when it asked, is left alone). The feed stays
        usable: a later method that needs Spark starts a new session."""
        session, owned = self._session, self._owns_session
        if session is None or not owned:
            return
        self._session, self._owns_session = None, False
        session.stop()

    def __repr__(self) -> str:
        return f"Feed({self.spec.feed!r}, warehouse={str(self.spec.warehouse)!r}, tiers={list(self.spec.tiers)})"

    # -- names and places ------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.spec.feed

    @property
    def tiers(self) -> dict[str, str]:
        """Tier name -> release policy, in the spec's order."""
        return dict(self.spec.tiers)

    def tier_path(self, tier: str) -> str:
        """The Delta table subscribers of ``tier`` read."""
        return self.spec.tier_path(self._tier(tier))

    def _tier(self, tier: str) -> str:
        if tier not in self.spec.tiers:
            raise WaterlineError(f"feed {self.name}: unknown tier {tier!r} (tiers: {', '.join(self.spec.tiers)})")
        return tier

    # -- Spark, on first use -----------------------------------------------------------

    @property
    def spark(self) -> "SparkSession":
        """The feed's Spark session, started on first use."""
        if self._session is None:
            room = _spark_room()
            config = self.session_config()
            running = room.session_running(config)
            self._session, self.jvm_log = room.quiet_session(config, quiet=self.quiet)
            self._owns_session = not running
        return self._session

    @property
    def spark_started(self) -> bool:
        return self._session is not None

    def stoppable(self, what: str, *, stop: threading.Event | None = None) -> AbstractContextManager[None]:
        """A context manager: SIGTERM and Ctrl-C stop the run inside it within the stop grace
        (120 s), the feed lease given back, whatever it is doing (`stop_on_signals`; ``stop``:
        set on the first signal, for a run that stops by itself when asked). Spark starts
        first, so PySpark's own Ctrl-C handler, which cancels the running jobs, is chained."""
        self.spark  # noqa: B018
        return stop_on_signals(f"feed {self.name}: {what}", stop=stop)

    def take_jvm_log(self) -> Path | None:
        """`jvm_log` the first time it is asked for once this feed's JVM writes there, else None:
        for callers that say where the JVM's own output goes once, however many steps use the feed."""
        if self.jvm_log is None or self._jvm_log_taken:
            return None
        self._jvm_log_taken = True
        return self.jvm_log

    def session_config(self) -> SessionConfig:
        """Where this feed's Spark runs: the ``spark`` argument, else the spec's key and the environment."""
        return self._config or SessionConfig.for_spec(self.spec.spark)

    # -- no Spark ------------------------------------------------------------------

    def plan(self, tier: str | None = None, *, partition: str | None = None, counts: bool = False) -> FeedPlan:
        """Each tier's compiled release plan (branches of guard, start, end), and what the spec
        file changes against the applied spec, with what the Delta logs count of it (a retired
        tier's rows, the tables a new column is added to).

        Policies may name only columns the feed produces: checked without Spark
        when the transform's select list (or the source's declared schema) names
        them, and against a partition's real output with ``partition`` (starts Spark).
        ``counts``: also count what a new or changed tier's next release does, with Spark over
        held, read only (`waterline plan` does; started only when such a change is pending on
        a feed that has released).
        """
        tiers = {self._tier(tier): self.spec.tiers[tier]} if tier else dict(self.spec.tiers)
        known = output_columns(self.spec)
        check_policies(self.spec, known)  # as the spec loader does: names, and types where known
        plans = {name: compile_policy(policy, tier=name) for name, policy in tiers.items()}
        if known.names is not None:
            checked, complete = f"columns checked against {known.source}", True
        else:
            checked, complete = f"columns not checked: {known.source}", False
        if partition is not None:
            key = self._partition(partition)
            room = _spark_room()
            room.compile_tiers(self.spark, self.spec, room.read_output(self.spark, self.spec, key))
            checked, complete = f"columns and types checked against the output of partition {key}", True
        current, diff = applied_spec.pending_changes(self.spec)  # the file against the applied spec
        counted = change_counts.static_counts(self.spec, diff) if diff else None
        if counted is not None and change_counts.needs_spark(self.spec, diff):
            if counts:
                counted = _spark_room().count_changes(self.spark, self.spec, diff, counted)
            else:
                counted = replace(counted, note="new and changed tiers not counted (Feed.plan(counts=True) or "
                                                "`waterline plan` counts them with Spark)")
        return FeedPlan(feed=self.name, policies=tiers, plans=plans, checked=checked, columns_checked=complete,
                        changes=tuple(diff.lines(counted)), applied=current is not None,
                        counts=None if counted is None else counted.to_dict())

    def status(self) -> FeedStatus:
        """Per tier: W_T, lag behind the trusted clock, pending versions, next due moment, hold
        (the numbers `waterline status` prints), from the Delta logs alone.

        A feed with no table yet (nothing ingested, or the spec's warehouse is not the feed's)
        is no error here: its status has ``exists=False`` and no tier due, so the Dagster
        sensor and the Airflow trigger wait on a new feed instead of failing; the CLI refuses it."""
        applied_spec.check_applied(self.spec)
        return read_feed_status(self.spec, clock=self.clock)

    def due(self) -> DueMoments:
        """Whether a release is due now, or a due moment is near enough to start a run that
        waits for it: the one "is a release due?" decision (`DueMoments.of` of `status`), which
        the Dagster sensor, the Airflow trigger and the Airflow release operator act on."""
        return DueMoments.of(self.spec, self.status())

    def read(self, tier: str, as_of: Instant | None = None, columns: list[str] | None = None, *,
             version: int | None = None) -> pa.Table:
        """What tier ``tier`` holds, as a pyarrow Table (read with ``deltalake``, no Spark).

        ``as_of``: an instant (µs, ISO-8601 text or a datetime, as `release` takes it): what the
        tier showed when its W_T was at that instant (the newest retained version whose W_T is
        at or before it). ``version``: a table version instead. Neither: the tier now.
        """
        if as_of is not None and version is not None:
            raise WaterlineError(f"feed {self.name}: read: give as_of (an instant) or version (a table version), not both")
        tier = self._tier(tier)
        as_of_us = None if as_of is None else self._instant(as_of, "as_of")
        return FeedTables.open(self.spec).read(tier, version=version, as_of_us=as_of_us, columns=columns)

    def changes(self, tier: str, since: int | None = None) -> pa.Table:
        """The tier's change data feed from table version ``since`` (None: its first version), as a
        pyarrow Table (read with ``deltalake``, no Spark): the columns of the tier plus Delta's
        ``_change_type`` (insert, update_preimage, update_postimage, delete), ``_commit_version``
        and ``_commit_timestamp``. Expiry and removals are deletes. Versions written before the
        tier kept a change feed have none: pass ``since`` at or after the first that does."""
        return FeedTables.open(self.spec).changes(self._tier(tier), since)

    def table_summary(self, table: str, *, partitions: list[str] | None = None) -> TableSummary:
        """``"held"``, ``"quarantine"`` or a tier: where it lives, its columns and its row count
        (of ``partitions`` only, when given), from the Delta log alone (no Spark)."""
        path = self._table_path(table)
        log = FeedTables.open(self.spec).log(path)
        return TableSummary(path=path, exists=log.exists, columns=tuple(log.columns()),
                            row_count=row_count(log, partitions))

    def quarantined(self, columns: list[str] | None = None) -> pa.Table | None:
        """The rows ingests quarantined (with ``_wl_partition`` and ``_wl_reason``), or None when
        nothing was ever quarantined (no table). No Spark."""
        log = FeedTables.open(self.spec).quarantine
        return log.to_arrow(columns) if log.exists else None

    def _table_path(self, table: str) -> str:
        if table == "held":
            return self.spec.held_path
        if table == "quarantine":
            return self.spec.quarantine_path
        return self.tier_path(table)

    def waterline_history(self, tier: str) -> WaterlineHistory:
        """W_T over the tier's retained commits (the monotonic-waterline invariant), no Spark."""
        return waterline_history(self.spec, self._tier(tier))

    # -- Spark -----------------------------------------------------------------------

    def ingest(self, partition: str) -> IngestResult:
        """Process ``partition`` and append what changed to the held table as versions."""
        key = self._partition(partition)
        applied_spec.check_applied(self.spec)
        result = _spark_room().ingest(self.spark, self.spec, key, clock=self.clock)
        applied_spec.record_first(self.spec, self.clock.now_us())  # the first ingest records spec version 1
        return result

    def stream(self, *, once: bool = True, trigger_seconds: float = 1.0, stop: threading.Event | None = None,
               on_batch: Callable[[StreamBatchResult], None] | None = None,
               warm_up_records: int | None = None) -> StreamRun:
        """Read the feed's Kafka sources into the held table, each micro-batch exactly once,
        releasing the tiers after a batch with rows due at once (a real-time tier).

        ``once``: drain what the topics hold now and return; otherwise run with a trigger every
        ``trigger_seconds`` until ``stop`` is set, then stop after the current batch. A
        long-running stream first runs ``warm_up_records`` copies of its topics' records
        through a batch's Spark job, writing nothing, so that its first batches are not slow
        (None: the engine's default, 20,000; 0: no warm-up)."""
        if trigger_seconds <= 0:
            raise WaterlineError(f"stream: trigger_seconds must be > 0, got {trigger_seconds}")
        if warm_up_records is not None and warm_up_records < 0:
            raise WaterlineError(f"stream: warm_up_records must be >= 0, got {warm_up_records}")
        applied_spec.check_applied(self.spec)
        applied_spec.record_first(self.spec, self.clock.now_us())
        return _spark_room().stream(self.spark, self.spec, once=once, trigger_seconds=trigger_seconds,
                                    clock=self.clock, stop=stop, on_batch=on_batch, warm_up_records=warm_up_records)

    def backfill(self, first: str, last: str, *, progress: bool | Callable[[IngestResult], None] = True
                 ) -> list[IngestResult]:
        """Ingest the partitions from ``first`` to ``last`` (inclusive), in order.

        ``progress``: True shows a progress bar on stderr, a callable receives each result.
        """
        keys = self.partitions(first, last)
        results = []
        bar = tqdm(keys, desc=f"backfill {self.name}", unit="partition", file=sys.stderr,
                   disable=progress is not True)
        for key in bar:
            bar.set_postfix_str(key, refresh=False)
            result = self.ingest(key)
            results.append(result)
            if callable(progress):
                progress(result)
        return results

    def partitions(self, first: str, last: str) -> list[str]:
        """The partition keys from ``first`` to ``last`` (inclusive), checked against the scheme."""
        first, last = self._partition(first, "first"), self._partition(last, "last")
        keys = self.spec.partitions.keys(first, last)
        if not keys:
            raise WaterlineError(f"feed {self.name}: no partitions from {first} to {last}")
        return keys

    def release(self, as_of: Instant | None = None, *, wait_until_due: bool = False,
                max_wait: Duration | None = None) -> ReleaseResult:
        """Advance every tier not on hold to W = min(``as_of``, the trusted clock, the mode's W)
        and publish what became due.

        ``wait_until_due``: start Spark now, wait on the trusted clock for the next due
        moment, release at it (``max_wait``: give up waiting after this long, in seconds, a
        `timedelta` or text such as ``"5 minutes"``, and release up to the clock). An int
        ``max_wait`` was microseconds before 0.9.0: it still is in this release, with a
        DeprecationWarning; pass a float of seconds or a `timedelta`.
        """
        if max_wait is not None and not wait_until_due:
            raise WaterlineError("release: max_wait needs wait_until_due")
        if as_of is not None and wait_until_due:
            raise WaterlineError("release: as_of and wait_until_due exclude each other (the due moment is the as-of)")
        applied_spec.check_applied(self.spec)
        room = _spark_room()
        if wait_until_due:
            limit = None if max_wait is None else _max_wait_us(max_wait)
            done = room.release_when_due(self.spark, self.spec, max_wait_us=limit, clock=self.clock)
            return done.result if done.due_us is None else _waited(done.result, done.due_us, done.reached)
        as_of_us = None if as_of is None else self._instant(as_of, "as_of")
        return room.release(self.spark, self.spec, as_of_us=as_of_us, clock=self.clock)

    def release_run(self, due_us: int | None) -> "ReleaseRun":
        """One orchestrated release run for ``due_us`` (from `due`; None: release now): waits on
        the trusted clock for a moment still ahead, releases, and when it waited also releases
        the moments that follow within ``release_lead_seconds``. The Dagster release asset and
        the Airflow release operator call this."""
        applied_spec.check_applied(self.spec)
        return _spark_room().release_run(self.spark, self.spec, due_us=due_us, clock=self.clock)

    def apply(self) -> tuple[applied_spec.AppliedSpec, applied_spec.SpecDiff]:
        """Make this spec's release part (tiers, policies, columns, key, event time, partitioning,
        time zone, waterline) the feed's applied spec, under the feed lease: the spec version in
        force after it and what changed (nothing: the applied version, unchanged). Refused in one
        line: a changed key, event time or partitioning, a removed or retyped column. A new output
        column is added to held and every tier table (nullable; older versions read NULL) before
        the version is recorded, without Spark. A tier added or a policy changed on a live feed
        starts Spark: held's schedule is recomputed and the new tier built at the feed's W first
        (docs/semantics.md, "When the spec changes"); any other change needs no Spark."""
        if applied_spec.needs_engine(self.spec):
            return _spark_room().apply(self.spark, self.spec, clock=self.clock)
        return applied_spec.apply_spec(self.spec, self.clock.now_us())

    def spec_versions(self) -> tuple[applied_spec.AppliedSpec, ...]:
        """Every applied spec version of the feed, oldest first: number, hash, the instant it
        took effect, its release part and what changed (empty before the first ingest). No Spark."""
        return applied_spec.history(self.spec)

    def retired_tiers(self) -> dict[str, int]:
        """The tiers an applied spec retired whose tables are kept (name -> the spec version
        that retired it): no longer released or served, still proven by `audit_history`."""
        return applied_spec.retired_tiers(self.spec)

    def hold(self, tier: str) -> TierState:
        """Stop releasing ``tier``: it keeps its rows and W_T until resumed."""
        return _spark_room().hold(self.spark, self.spec, self._tier(tier))

    def resume(self, tier: str) -> TierState:
        """Release ``tier`` again; the next release catches it up."""
        return _spark_room().resume(self.spark, self.spec, self._tier(tier))

    def audit_current(self, tiers: list[str] | None = None) -> dict[str, TierAudit]:
        """Check what each tier (all by default) shows now, at the version carrying its W_T:
        every row visible at W_T under the tier's policy, W_T not ahead of the trusted clock,
        identities unique. (`audit_history` proves the releases that led there.)"""
        room = _spark_room()
        out, plans = {}, None
        for tier in tiers if tiers is not None else self.spec.tiers:
            out[tier], plans = room.audit_tier(self.spark, self.spec, self._tier(tier), clock=self.clock, plans=plans)
        return out

    def audit(self, tiers: list[str] | None = None) -> dict[str, TierAudit]:
        """Deprecated name of `audit_current` (kept for one release)."""
        warnings.warn("Feed.audit is deprecated: it is Feed.audit_current (what the tiers show now); "
                      "Feed.audit_history proves the releases", DeprecationWarning, stacklevel=2)
        return self.audit_current(tiers)

    def audit_history(self, start: Instant | None = None, end: Instant | None = None, *,
                      tiers: list[str] | None = None) -> dict[str, TierProof]:
        """The release proof of each tier (all by default) over its commits that committed in
        ``[start, end]`` (default: every retained one): for every row each commit released, the
        instant it became due (recomputed from the row and the tier's policy in the spec version
        the commit was released under) against when the commit happened; a row committed before
        it was due is a breach. Commits the proof cannot see (cleaned from the log, before the
        change data feed) are named in ``unproven``; commits `maintain` proved and kept are
        taken as kept. Tiers an apply retired, whose tables are kept, are proven too."""
        from_us = None if start is None else self._instant(start, "start")
        to_us = None if end is None else self._instant(end, "end")
        if from_us is not None and to_us is not None and to_us < from_us:
            raise WaterlineError(f"audit: end {format_instant(to_us)} is before start {format_instant(from_us)}")
        retired = applied_spec.retired_tiers(self.spec)  # their releases are proven too
        room = _spark_room()
        out, plans = {}, None
        for tier in tiers if tiers is not None else [*self.spec.tiers, *retired]:
            tier = tier if tier in retired else self._tier(tier)
            out[tier], plans = room.prove_tier(self.spark, self.spec, tier, from_us=from_us, to_us=to_us, plans=plans)
        return out

    def maintain(self, tier: str | None = None) -> MaintainResult:
        """Keep the tables flat as the feed ages, under the feed lease: prove and keep each tier's
        new releases (what `audit_history` reads once their change data is gone), compact each
        tier's small files (no change-feed rows), vacuum files past ``maintenance.time_travel``,
        checkpoint and clean the log, delete stages that never committed. ``tier``: only that tier
        (default: every tier and the held table)."""
        tiers = None if tier is None else [self._tier(tier)]
        return _spark_room().maintain(self.spark, self.spec, tiers=tiers)

    def gc(self) -> GcResult:
        """Drop held versions that can never change a tier again, compact the held table, and
        delete the files of pre-staged releases that never committed (after a grace period)."""
        return _spark_room().gc(self.spark, self.spec)

    # -- helpers ---------------------------------------------------------------------

    def _partition(self, key: str, what: str = "partition") -> str:
        if self.spec.is_stream:
            raise WaterlineError(f"feed {self.name} streams from Kafka: `waterline stream` (Feed.stream) ingests it; "
                                 f"it has no {what} to read")
        try:
            return self.spec.partitions.validate(str(key))
        except WaterlineError as exc:
            raise WaterlineError(f"{what}: {exc}") from None

    def _instant(self, value: Instant, what: str) -> int:
        if isinstance(value, datetime):
            return to_us(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        try:
            return parse_instant(value, now_us=self.clock.now_us)
        except WaterlineError as exc:
            raise WaterlineError(f"{what}: {exc}") from None


def _max_wait_us(value: Duration) -> int:
    """``max_wait`` in µs: seconds, a timedelta or text; an int is still µs, deprecated."""
    if isinstance(value, int) and not isinstance(value, bool):
        warnings.warn("release(max_wait=<int>) is read as microseconds, deprecated: pass seconds as a float "
                      "or a timedelta (from the next release an int is seconds)", DeprecationWarning, stacklevel=3)
        if value < 0:
            raise WaterlineError(f"release: max_wait must not be negative, got {value}")
        return value
    try:
        return duration_us(parse_duration(value))
    except (ValueError, WaterlineError) as exc:
        raise WaterlineError(f"release: max_wait: {exc}") from None


def _waited(result: ReleaseResult, due_us: int, reached: bool) -> ReleaseResult:
    return replace(result, waited_for_us=due_us, reached=reached)


__all__ = ["Duration", "Feed", "Instant", "SessionConfig", "SparkSettings", "Stopped", "check_master", "check_remote",
           "end_within_grace", "exit_code", "load", "stop_told"]
