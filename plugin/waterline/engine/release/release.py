"""Release a feed's tiers to a waterline W: the incremental form of DESIGN.md's rules.

The plan (`waterline.engine.release.planning`) finds, per tier, the identities whose
rows can change between the tier's state and W, and their rows at W. Held files
whose statistics exclude a change are never read, so the cost follows what is
due, not the backlog. The release then makes one Delta commit per tier carrying
the changed files and the new state (`waterline.engine.release.prestage` writes
the files, `waterline.engine.release.prestaged` the commit). A tier whose Delta
protocol that writer does not honour, or that lacks its change data feed, takes
the Spark path: a MERGE carrying the state, then the state as the table property.
`waterline.semantics.advance_state` is the oracle of this step; tests compare the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from waterline.clock import Clock, FixedClock, SystemClock
from waterline.engine.core import columns as C
from waterline.engine.core import faults
from waterline.engine.core.event_time import target_waterline
from waterline.engine.core.held_stats import CandidateScope, candidate_scope, single_ingest_partitions
from waterline.engine.core.races import SkippedCommit, new_token, retry_lost_races
from waterline.engine.core.results import ReleaseResult, TierRelease, combine_releases
from waterline.engine.core.sqltext import delta_path, sql_string
from waterline.engine.core.state import TierState
from waterline.engine.tables.lease import Lease, feed_lease
from waterline.engine.release.prestaged import StagedCommit, commit_staged, discard
from waterline.engine.delta.table_log import APP_COMMIT, TableLog
from waterline.engine.tables import applied_spec, feed_tables
from waterline.engine.spark.commits import commit_state, record_state
from waterline.engine.spark.conflicts import is_commit_conflict
from waterline.engine.release.planning import PRESENT, REASON, desired_rows, plan_step, tier_outlook
from waterline.engine.release.step_context import StepContext, TierStep
from waterline.engine.release.prestage import stage
from waterline.engine.tables.spark_tables import complete_tier_tables, ensure_change_feed, read_delta
from waterline.engine.spark.views import temp_view
from waterline.errors import WaterlineError
from waterline.spec import FeedSpec


def release(spark: SparkSession, spec: FeedSpec, *, as_of_us: int | None = None,
            clock: Clock | None = None, tiers: Sequence[str] | None = None) -> ReleaseResult:
    """Advance every tier not on hold to W and publish what became due.

    ``tiers``: only these (the result names only them); a stream releases the tiers its
    batch made due at once first, so their commit does not wait for the others' staging."""
    clock = clock or SystemClock()
    chosen = tuple(spec.tiers) if tiers is None else tuple(tiers)
    unknown = [t for t in chosen if t not in spec.tiers]
    if unknown:
        raise WaterlineError(f"feed {spec.feed}: no tier {unknown[0]!r} (tiers: {', '.join(spec.tiers)})")
    with feed_lease(spec.feed_dir, feed=spec.feed) as lease:
        return release_locked(spark, spec, lease, as_of_us=as_of_us, clock=clock, tiers=chosen)


@dataclass(frozen=True)
class _Asked:
    """What a release was asked for: up to which instant, which tiers, and under which spec
    version (None: the applied one, read under the lease)."""

    as_of_us: int | None
    tiers: tuple[str, ...]
    spec_version: int | None = None


def release_locked(spark: SparkSession, spec: FeedSpec, lease: Lease, *, as_of_us: int | None, clock: Clock,
                   tiers: tuple[str, ...], spec_version: int | None = None) -> ReleaseResult:
    """`release` of ``tiers`` by a caller that holds the feed lease (`waterline apply` builds a
    new tier with it, under ``spec_version``: the version it is about to record, which the
    applied spec does not name yet)."""
    asked = _Asked(as_of_us, tiers, spec_version)
    committed: list[ReleaseResult] = []  # tiers an attempt committed before it lost a race on another
    # A lost race (a conflicting commit, or Delta skipped ours as already applied) plans
    # again from the tiers' new states, so W_T never goes back and no step computed
    # from a stale state is applied; tiers already committed are settled in the new plan.
    result = retry_lost_races(
        lambda: _release_locked(spark, spec, asked, clock, lease, committed),
        is_race=is_commit_conflict, before_retry=lease.check, what=f"feed {spec.feed}: release",
    )
    return with_committed(committed, result)


def with_committed(committed: list[ReleaseResult], result: ReleaseResult) -> ReleaseResult:
    """``result`` reporting, for tiers earlier attempts of the same release committed, what
    those commits did too."""
    if not committed:
        return result
    return replace(combine_releases([*committed, result]), requested_us=result.requested_us)


def _release_locked(spark: SparkSession, spec: FeedSpec, asked: _Asked, clock: Clock,
                    lease: Lease, committed: list[ReleaseResult]) -> ReleaseResult:
    now = clock.now_us()
    as_of_us, tiers = asked.as_of_us, asked.tiers
    # under the lease: no apply comes between the version read and the commits
    held_log = TableLog.open(spec.held_path)
    version = applied_spec.in_force(spec, held_log) if asked.spec_version is None else asked.spec_version
    held_state = feed_tables.held_state(held_log, spec.feed)
    seq = held_state.seq
    target = target_waterline(spec, held_state, now, as_of_us)
    results: dict[str, TierRelease] = {}
    if held_log.exists:
        # tiers a run killed while creating them left missing: created before anything is planned
        complete_tier_tables(spark, spec, held_log)
        # an apply's first release of its new tiers runs the Spark path: the staged path checks
        # its commits against the applied version, which names them only once the apply records
        staged = None if asked.spec_version is not None else stage(
            spark, spec, w_us=target, clock=FixedClock(now), target_us=target, held_log=held_log, tiers=tiers)
        if staged is not None:
            outcome = StagedCommit(None, reason="not committed")
            try:
                outcome = commit_staged(spec, staged, clock=clock, lease=lease, now_us=now)
            finally:
                if outcome.result is None:
                    discard(spec, staged, keep=outcome.committed)
            if outcome.result is not None:
                return replace(outcome.result, requested_us=as_of_us)
            if outcome.partial is not None:
                committed.append(replace(outcome.partial, requested_us=as_of_us))
            # another writer moved a table: plan again from the tables as they are (retry_lost_races)
            raise SkippedCommit(f"feed {spec.feed}: staged release not committed: {outcome.reason}")
        held = read_delta(spark, spec.held_path).filter(f"{C.SEQ} <= {seq}")
        steps = []
        for tier in tiers:
            step_or_result = plan_step(spec, tier, held.columns, target, seq, held_state=held_state)
            if isinstance(step_or_result, TierRelease):
                results[tier] = step_or_result
            else:
                steps.append(step_or_result)
        if steps:
            files = feed_tables.held_files(held_log, spec.tiers)
            outlooks = tier_outlook(held, files, steps)
            single = single_ingest_partitions(files)
            for i, step in enumerate(steps):
                faults.boundary(faults.RELEASE_BEFORE_MERGE if i == 0 else faults.RELEASE_BETWEEN_TIERS)
                scope = candidate_scope(files, step.tier, low=step.low, s0=step.since, w=step.w)
                ctx = _step_context(spark, spec, step, scope, single, outlooks[step.tier], version)
                results[step.tier] = _apply(spark, ctx, held, lease=lease)
            faults.boundary(faults.RELEASE_AFTER_TIERS)
    results = {t: results[t] for t in tiers if t in results}
    w = max([target] + [r.w_us for r in results.values() if not r.held])
    return ReleaseResult(feed=spec.feed, requested_us=as_of_us, w_us=w, seq=seq, tiers=results)


def rehearse(spark: SparkSession, spec: FeedSpec, *, w_us: int) -> None:
    """A release's read side at ``w_us``, committing nothing and taking no lease.

    A pre-armed run calls it while it waits for ``w_us``: the tables' snapshots are
    loaded and each tier's desired rows planned and computed once, so the release
    after the due moment does not pay a fresh JVM's first queries (on 2 cores a
    cold first release took 15 s). Nothing is kept: the release recomputes from
    the state it reads under the lease, whatever was ingested in between.
    """
    held_log = TableLog.open(spec.held_path)
    if not held_log.exists:
        return
    seq = feed_tables.held_state(held_log, spec.feed).seq
    held = read_delta(spark, spec.held_path).filter(f"{C.SEQ} <= {seq}")
    files = feed_tables.held_files(held_log, spec.tiers)
    single = single_ingest_partitions(files)
    keys = [C.PARTITION, *spec.key]
    payload = [c for c in held.columns if not C.is_system(c)]
    for tier in spec.tiers:
        step = plan_step(spec, tier, held.columns, w_us, seq)
        if isinstance(step, TierRelease):  # on hold, or nothing to do at w_us
            continue
        read_delta(spark, spec.tier_path(tier)).schema  # noqa: B018  (the tier's snapshot, for its MERGE)
        scope = candidate_scope(files, tier, low=step.low, s0=step.since, w=step.w)
        if scope.partitions:
            desired_rows(held, step, keys, payload, scope, single).groupBy(REASON).count().collect()


def _step_context(spark: SparkSession, spec: FeedSpec, step: TierStep, scope: CandidateScope, single: set[str],
                  outlook: tuple[int | None, int], version: int | None) -> StepContext:
    """The step as the Spark path applies it: the tier's new state (next due, pending, the
    spec ``version`` it is released under) and its log read after the tier has its change
    data feed."""
    next_due, pending = outlook
    state = TierState(op="release", tier=step.tier, w=step.w, seq=step.seq, hold=False,
                      next_due=next_due, pending=pending, n=step.n, token=new_token(), spec=version)
    path = spec.tier_path(step.tier)
    ensure_change_feed(spark, path)  # tiers created before they kept a change data feed
    return StepContext(spec=spec, step=step, state=state, tier_log=TableLog.open(path), scope=scope, single=single)


def _apply(spark: SparkSession, ctx: StepContext, held: DataFrame, *, lease: Lease) -> TierRelease:
    """Commit the tier's new rows and its new (W_T, seq) together, then the state as the
    table property too (it survives log cleanup; the MERGE's own state may not).

    The MERGE carries the Delta transaction (``waterline.commit``, n): if another writer
    already committed n, Delta skips it and `SkippedCommit` makes the caller replan."""
    step, new_state, scope = ctx.step, ctx.state, ctx.scope
    keys = ctx.keys
    payload = [c for c in held.columns if not C.is_system(c)]
    metrics = {"inserted": 0, "updated": 0, "deleted": 0}
    reasons: dict[str, int] = {}
    path = ctx.spec.tier_path(step.tier)
    before = ctx.tier_log.version
    lease.check()  # the last moment a lost lease can stop the commit
    partitions = list(scope.partitions)
    if partitions:
        desired = desired_rows(held, step, keys, payload, scope, ctx.single).cache()
        try:
            reasons = {
                r[REASON]: r["n"] for r in desired.groupBy(REASON).agg(F.count(F.lit(1)).alias("n")).collect()
            }
            if reasons or step.reconcile:  # no candidate at all: skip the MERGE, record the state below
                with commit_state(spark, new_state, app=APP_COMMIT, version=step.n):
                    _merge(spark, ctx, desired, payload)
        finally:
            desired.unpersist()
    elif step.reconcile:  # no version is due at all: no row may be in the tier
        with commit_state(spark, new_state, app=APP_COMMIT, version=step.n):
            spark.sql(f"DELETE FROM {delta_path(path)}")
    after = TableLog.open(path)
    if after.version != before:
        feed_tables.committed_version(after, new_state.token, after=before)
        metrics = _merge_metrics(after)
    elif (after.transaction_version(APP_COMMIT) or 0) >= step.n:
        raise SkippedCommit(f"{path}: release commit n={step.n} already applied by another writer")
    # nothing changed rows (or nothing was due), or after the MERGE: record (W_T, seq) where log cleanup keeps it
    faults.boundary(faults.RELEASE_BEFORE_PROPERTY)
    record_state(spark, path, new_state)
    return TierRelease(
        tier=step.tier, w_us=step.w, previous_w_us=step.w0, seq=step.seq,
        released=metrics["inserted"], updated=metrics["updated"], removed=metrics["deleted"],
        expired=min(reasons.get("expired", 0), metrics["deleted"]), candidates=sum(reasons.values()),
        next_due_us=new_state.next_due, changed=any(metrics.values()),
    )


def _merge(spark: SparkSession, ctx: StepContext, desired: DataFrame, payload: list[str]) -> None:
    """One SQL MERGE of the desired rows into the tier (SQL, so it runs over Spark Connect too).

    A step that reconciles (``step.reconcile``): the desired rows are every due identity's,
    the tier may hold anything another writer left (rows deleted, changed or added by hand):
    every column is compared, and tier rows no desired row matches are deleted."""
    keys, partitions, reconcile = ctx.keys, list(ctx.scope.partitions), ctx.step.reconcile
    columns = [f"`{c}`" for c in payload + [C.PARTITION, C.SEQ, C.START, C.END]]
    if reconcile:
        on = " AND ".join(f"t.`{k}` = s.`{k}`" for k in keys)
        changed = " OR ".join(f"NOT (t.{c} <=> s.{c})" for c in columns)
    else:
        in_partitions = ", ".join(sql_string(p) for p in partitions)
        on = " AND ".join([f"t.`{k}` = s.`{k}`" for k in keys] + [f"t.{C.PARTITION} IN ({in_partitions})"])
        changed = f"t.{C.SEQ} <> s.{C.SEQ} OR t.{C.START} <> s.{C.START} OR t.{C.END} <> s.{C.END}"
    with temp_view(desired) as source:
        spark.sql(
            f"MERGE INTO {delta_path(ctx.spec.tier_path(ctx.tier))} AS t USING {source} AS s ON {on} "
            f"WHEN MATCHED AND NOT s.{PRESENT} THEN DELETE "
            f"WHEN MATCHED AND s.{PRESENT} AND ({changed}) THEN UPDATE SET "
            + ", ".join(f"{c} = s.{c}" for c in columns)
            + f" WHEN NOT MATCHED AND s.{PRESENT} THEN INSERT ({', '.join(columns)}) "
            f"VALUES ({', '.join(f's.{c}' for c in columns)})"
            + (" WHEN NOT MATCHED BY SOURCE THEN DELETE" if reconcile else "")
        )


def _merge_metrics(log: TableLog) -> dict[str, int]:
    m = log.last_commit_metrics()
    return {
        "inserted": int(m.get("numTargetRowsInserted", 0)),
        "updated": int(m.get("numTargetRowsUpdated", 0)),
        "deleted": int(m.get("numTargetRowsDeleted", 0)),
    }


