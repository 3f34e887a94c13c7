"""Release a feed's tiers to a waterline W: the incremental form of DESIGN.md's rules.

For tier T at state (W0, S0) moving to (W, S), an identity's tier row can only
change if one of its versions
  * was ingested since (seq in (S0, S]) and has takeover <= W, or
  * has a visibility boundary (a start, takeover included, or an end) in (W0, W].
Those identities are the *candidates*; for each, the governing version at W is
recomputed from all its versions, and one MERGE applies the result together with
the new (W, S) in the same Delta commit. Everything else is untouched, and
held files whose statistics exclude both conditions are never read, so the cost
follows what is due, not the backlog. `waterline.semantics.advance_state` is the
oracle of this step; tests compare the two.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from waterline.clock import Clock, SystemClock
from waterline.engine.core import columns as C
from waterline.engine.core import faults
from waterline.engine.core.event_time import target_waterline
from waterline.engine.core.held_stats import (
    HeldFile,
    candidate_partitions,
    outlook,
    single_ingest_partitions,
)
from waterline.engine.core.races import SkippedCommit, new_token, retry_lost_races
from waterline.engine.core.results import ReleaseResult, TierRelease
from waterline.engine.core.sqltext import delta_path, sql_string
from waterline.engine.core.state import TierState
from waterline.engine.log.lease import Lease, feed_lease
from waterline.engine.log.table_log import APP_COMMIT, TableLog
from waterline.engine.spark.commits import commit_state, record_state
from waterline.engine.spark.conflicts import is_commit_conflict
from waterline.engine.spark.schedule import (
    check_tiers_scheduled,
    stored_end_sql,
    stored_vis_sql,
)
from waterline.engine.spark.tables import ensure_change_feed, read_delta
from waterline.engine.spark.views import temp_view
from waterline.semantics import NEG_INF, POS_INF
from waterline.spec import FeedSpec

PRESENT = "_wl_present"
REASON = "_wl_reason"


@dataclass(frozen=True)
class TierStep:
    """One tier's move from (w0, s0) to (w, seq); `low` is w0 with "never released" as NEG_INF."""

    tier: str
    w0: int | None
    s0: int
    w: int
    seq: int
    n: int  # the tier state's commit number this step commits (Delta txnVersion)

    @property
    def low(self) -> int:
        return NEG_INF if self.w0 is None else self.w0

    def candidate_filter(self) -> Column:
        """Versions that may change this tier's rows between (w0, s0) and (w, seq)."""
        t, low, w = self.tier, self.low, self.w
        tau, end = C.tau(t), stored_end_sql(t)
        due = F.col(tau) <= w
        # A NULL array is the single interval [tau, end) (see `stored_vis_sql`): no lambda.
        crossed = F.expr(
            f"CASE WHEN {C.vis(t)} IS NULL "
            f"THEN ({tau} > {low} AND {tau} <= {w}) OR (({end}) > {low} AND ({end}) <= {w}) "
            f"ELSE exists({C.vis(t)}, i -> (i.start > {low} AND i.start <= {w}) OR (i.`end` > {low} AND i.`end` <= {w})) "
            "END"
        )
        return due & ((F.col(C.SEQ) > self.s0) | ((F.col(C.last(t)) > low) & crossed))


def release(spark: SparkSession, spec: FeedSpec, *, as_of_us: int | None = None,
            clock: Clock | None = None) -> ReleaseResult:
    """Advance every tier not on hold to W and publish what became due."""
    clock = clock or SystemClock()
    with feed_lease(spec.feed_dir, feed=spec.feed) as lease:
        # A lost race (a conflicting commit, or Delta skipped ours as already applied) plans
        # again from the tiers' new states, so W_T never goes back and no step computed
        # from a stale state is applied.
        return retry_lost_races(
            lambda: _release_locked(spark, spec, as_of_us, clock, lease),
            is_race=is_commit_conflict, before_retry=lease.check, what=f"feed {spec.feed}: release",
        )


def _release_locked(spark: SparkSession, spec: FeedSpec, as_of_us: int | None, clock: Clock,
                    lease: Lease) -> ReleaseResult:
    now = clock.now_us()
    held_log = TableLog.open(spec.held_path)
    held_state = held_log.held_state(spec.feed)
    seq = held_state.seq
    target = target_waterline(spec, held_state, now, as_of_us)
    results: dict[str, TierRelease] = {}
    if held_log.exists:
        held = read_delta(spark, spec.held_path).filter(f"{C.SEQ} <= {seq}")
        steps = []
        for tier in spec.tiers:
            step_or_result = plan_step(spec, tier, held, target, seq)
            if isinstance(step_or_result, TierRelease):
                results[tier] = step_or_result
            else:
                steps.append(step_or_result)
        if steps:
            files = held_log.held_files(spec.tiers)
            outlooks = tier_outlook(held, files, steps)
            single = single_ingest_partitions(files)
            for i, step in enumerate(steps):
                faults.boundary(faults.RELEASE_BEFORE_MERGE if i == 0 else faults.RELEASE_BETWEEN_TIERS)
                partitions = candidate_partitions(files, step.tier, low=step.low, s0=step.s0, w=step.w)
                results[step.tier] = _apply(
                    spark, spec, step, held, partitions, single, *outlooks[step.tier], lease=lease
                )
    results = {t: results[t] for t in spec.tiers if t in results}
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
    seq = held_log.held_state(spec.feed).seq
    held = read_delta(spark, spec.held_path).filter(f"{C.SEQ} <= {seq}")
    files = held_log.held_files(spec.tiers)
    single = single_ingest_partitions(files)
    keys = [C.PARTITION, *spec.key]
    payload = [c for c in held.columns if not C.is_system(c)]
    for tier in spec.tiers:
        step = plan_step(spec, tier, held, w_us, seq)
        if isinstance(step, TierRelease):  # on hold, or nothing to do at w_us
            continue
        read_delta(spark, spec.tier_path(tier)).schema  # noqa: B018  (the tier's snapshot, for its MERGE)
        partitions = candidate_partitions(files, tier, low=step.low, s0=step.s0, w=step.w)
        if partitions:
            desired_rows(held, step, keys, payload, partitions, single).groupBy(REASON).count().collect()


def plan_step(spec: FeedSpec, tier: str, held: DataFrame, target: int, seq: int) -> TierStep | TierRelease:
    """The tier's step, or its final result when it is on hold or already at (W, seq)."""
    state = TableLog.open(spec.tier_path(tier)).tier_state()
    w0, s0 = state.w, state.seq
    if state.hold:
        return TierRelease(tier=tier, w_us=w0, previous_w_us=w0, seq=s0, held=True)
    check_tiers_scheduled(spec, held.columns, tiers=[tier])
    w = target if w0 is None else max(w0, target)  # the waterline never goes back
    if w0 is not None and w == w0 and seq == s0:
        return TierRelease(tier=tier, w_us=w, previous_w_us=w0, seq=seq, next_due_us=state.next_due)
    return TierStep(tier=tier, w0=w0, s0=s0, w=w, seq=seq, n=state.n + 1)


def _apply(spark: SparkSession, spec: FeedSpec, step: TierStep, held: DataFrame, partitions: list[str],
           single: set[str], next_due: int | None, pending: int, *, lease: Lease) -> TierRelease:
    """Commit the tier's new rows and its new (W_T, seq) together, then the state as the
    table property too (it survives log cleanup; the MERGE's own state may not).

    The MERGE carries the Delta transaction (``waterline.commit``, n): if another writer
    already committed n, Delta skips it and `SkippedCommit` makes the caller replan."""
    keys = [C.PARTITION, *spec.key]
    payload = [c for c in held.columns if not C.is_system(c)]
    metrics = {"inserted": 0, "updated": 0, "deleted": 0}
    reasons: dict[str, int] = {}
    new_state = TierState(op="release", tier=step.tier, w=step.w, seq=step.seq, hold=False,
                          next_due=next_due, pending=pending, n=step.n, token=new_token())
    path = spec.tier_path(step.tier)
    ensure_change_feed(spark, path)  # tiers created before they kept a change data feed
    before = TableLog.open(path).version
    lease.check()  # the last moment a lost lease can stop the commit
    if partitions:
        desired = desired_rows(held, step, keys, payload, partitions, single).cache()
        try:
            reasons = {
                r[REASON]: r["n"] for r in desired.groupBy(REASON).agg(F.count(F.lit(1)).alias("n")).collect()
            }
            if reasons:  # no candidate at all: skip the MERGE, record the state below
                with commit_state(spark, new_state, app=APP_COMMIT, version=step.n):
                    _merge(spark, spec, step.tier, desired, keys, payload, partitions)
        finally:
            desired.unpersist()
    after = TableLog.open(path)
    if after.version != before:
        after.committed_version(new_state.token, after=before)
        metrics = _merge_metrics(after)
    elif (after.transaction_version(APP_COMMIT) or 0) >= step.n:
        raise SkippedCommit(f"{path}: release commit n={step.n} already applied by another writer")
    # nothing changed rows (or nothing was due), or after the MERGE: record (W_T, seq) where log cleanup keeps it
    record_state(spark, path, new_state)
    return TierRelease(
        tier=step.tier, w_us=step.w, previous_w_us=step.w0, seq=step.seq,
        released=metrics["inserted"], updated=metrics["updated"], removed=metrics["deleted"],
        expired=min(reasons.get("expired", 0), metrics["deleted"]), candidates=sum(reasons.values()),
        next_due_us=next_due, changed=any(metrics.values()),
    )


def desired_rows(held: DataFrame, step: TierStep, keys: list[str], payload: list[str], partitions: list[str],
             single: set[str]) -> DataFrame:
    """The tier rows the candidates must have at W: DESIGN.md rule 3, per identity.

    One grouping over the due versions of the candidate partitions finds both
    whether an identity is a candidate and its governing version (the due
    version with the greatest seq); file statistics prune versions not yet due.
    In partitions written by a single ingest each identity has one version, so
    a due candidate version governs as it is, without the grouping's shuffle.
    """
    tier, w = step.tier, step.w
    carried = [F.col(c) for c in payload if c not in keys[1:]] + [F.col(C.SEQ), F.col(C.REMOVED)]
    carried.append(F.expr(stored_vis_sql(tier)).alias(C.vis(tier)))
    due = held.filter(F.col(C.tau(tier)) <= w)
    grouped = [p for p in partitions if p not in single]
    direct = [p for p in partitions if p in single]
    parts = []
    if grouped:
        parts.append(
            due.filter(F.col(C.PARTITION).isin(grouped))
            .groupBy(*keys)
            .agg(
                F.max(step.candidate_filter()).alias("_wl_candidate"),
                F.max_by(F.struct(*carried), F.col(C.SEQ)).alias("_g"),
            )
            .filter("_wl_candidate")
            .select(*keys, "_g.*")
        )
    if direct:
        parts.append(due.filter(F.col(C.PARTITION).isin(direct) & step.candidate_filter()).select(*keys, *carried))
    governing = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
    now_in = f"filter({C.vis(tier)}, i -> {w} >= i.start AND {w} < i.`end`)"
    return (
        governing.withColumn("_wl_now", F.expr(f"try_element_at({now_in}, 1)"))
        .withColumn(PRESENT, ~F.col(C.REMOVED) & F.col("_wl_now").isNotNull())
        .withColumn(C.START, F.col("_wl_now.start"))
        .withColumn(C.END, F.col("_wl_now.end"))
        .withColumn(
            REASON,
            F.when(F.col(PRESENT), "present")
            .when(F.col(C.REMOVED) | (F.size(C.vis(tier)) == 0), "removed")
            .when(F.expr(f"try_element_at({C.vis(tier)}, -1).`end` <= {w}"), "expired")
            .otherwise("between"),
        )
        .drop("_wl_now", C.vis(tier), C.REMOVED)
    )


def _merge(spark: SparkSession, spec: FeedSpec, tier: str, desired: DataFrame, keys: list[str],
           payload: list[str], partitions: list[str]) -> None:
    """One SQL MERGE of the desired rows into the tier (SQL, so it runs over Spark Connect too)."""
    in_partitions = ", ".join(sql_string(p) for p in partitions)
    on = " AND ".join([f"t.`{k}` = s.`{k}`" for k in keys] + [f"t.{C.PARTITION} IN ({in_partitions})"])
    columns = [f"`{c}`" for c in payload + [C.PARTITION, C.SEQ, C.START, C.END]]
    changed = f"t.{C.SEQ} <> s.{C.SEQ} OR t.{C.START} <> s.{C.START} OR t.{C.END} <> s.{C.END}"
    with temp_view(desired) as source:
        spark.sql(
            f"MERGE INTO {delta_path(spec.tier_path(tier))} AS t USING {source} AS s ON {on} "
            f"WHEN MATCHED AND NOT s.{PRESENT} THEN DELETE "
            f"WHEN MATCHED AND s.{PRESENT} AND ({changed}) THEN UPDATE SET "
            + ", ".join(f"{c} = s.{c}" for c in columns)
            + f" WHEN NOT MATCHED AND s.{PRESENT} THEN INSERT ({', '.join(columns)}) "
            f"VALUES ({', '.join(f's.{c}' for c in columns)})"
        )


def _merge_metrics(log: TableLog) -> dict[str, int]:
    m = log.last_commit_metrics()
    return {
        "inserted": int(m.get("numTargetRowsInserted", 0)),
        "updated": int(m.get("numTargetRowsUpdated", 0)),
        "deleted": int(m.get("numTargetRowsDeleted", 0)),
    }


def tier_outlook(held: DataFrame, files: list[HeldFile], steps: list[TierStep]) -> dict[str, tuple[int | None, int]]:
    """Per tier: the next instant after W at which some version's visibility changes, and
    the number of versions not yet taken over.

    File statistics settle most files (all pending, or all behind W); one Spark pass
    reads only the partitions holding the rest, so the pending backlog is never read.
    """
    known = {step.tier: outlook(files, step.tier, w=step.w, seq=step.seq) for step in steps}
    to_read = sorted(set().union(*(k.open_partitions for k in known.values())))
    row = None
    if to_read:
        aggs, still_open = [], F.lit(False)
        for i, step in enumerate(steps):
            t, w = step.tier, step.w
            open_ = F.col(C.PARTITION).isin(sorted(known[t].open_partitions)) & (F.col(C.last(t)) > w)
            still_open = still_open | open_
            tau, end = C.tau(t), stored_end_sql(t)
            next_boundary = F.expr(  # a NULL array is [tau, end): see `stored_vis_sql`
                f"CASE WHEN {C.vis(t)} IS NULL THEN (CASE WHEN {tau} > {w} THEN {tau} "
                f"WHEN ({end}) > {w} AND ({end}) < {POS_INF} THEN {end} ELSE {POS_INF} END) "
                f"ELSE aggregate({C.vis(t)}, CAST({POS_INF} AS BIGINT), (acc, i) -> least(acc, "
                f"CASE WHEN i.start > {w} THEN i.start WHEN i.`end` > {w} AND i.`end` < {POS_INF} THEN i.`end` "
                f"ELSE {POS_INF} END)) END"
            )
            aggs += [F.min(F.when(open_, next_boundary)).alias(f"n{i}"),
                     F.count(F.when(open_ & (F.col(C.tau(t)) > w), 1)).alias(f"p{i}")]
        row = held.filter(F.col(C.PARTITION).isin(to_read)).filter(still_open).agg(*aggs).collect()[0]
    out = {}
    for i, step in enumerate(steps):
        nexts = [x for x in (known[step.tier].next_due, row and row[f"n{i}"]) if x is not None and x < POS_INF]
        out[step.tier] = (min(nexts) if nexts else None), known[step.tier].pending + (row[f"p{i}"] if row else 0)
    return out
