"""Planning a release, shared by the Spark path (`release`) and pre-staging (`staging`).

For tier T at state (W0, S0) moving to (W, S), an identity's tier row can only
change if one of its versions
  * was ingested since (seq in (S0, S]) and has takeover <= W, or
  * has a visibility boundary (a start, takeover included, or an end) in (W0, W].
Those identities are the *candidates* (`candidate_filter`); for each,
`desired_rows` recomputes the governing version at W from all its versions.
`tier_outlook` gives the next due instant and the pending count the new state carries.
"""

from __future__ import annotations

from typing import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from waterline.engine.core import columns as C
from waterline.engine.release.driver_step import PRESENT, REASON
from waterline.engine.release.step_context import TierStep
from waterline.engine.core.held_stats import CandidateScope, HeldFile, outlook
from waterline.engine.core.results import TierRelease
from waterline.engine.core.state import HeldState
from waterline.engine.delta.table_log import TableLog
from waterline.engine.tables import feed_tables
from waterline.engine.tables.schedule import check_tiers_scheduled, stored_end_sql, stored_vis_sql
from waterline.semantics import POS_INF
from waterline.spec import FeedSpec



def candidate_filter(step: TierStep) -> Column:
    """Versions that may change this tier's rows between (w0, s0) and (w, seq)."""
    t, low, w = step.tier, step.low, step.w
    tau, end = C.tau(t), stored_end_sql(t)
    due = F.col(tau) <= w
    if step.reconcile:
        return due
    # A NULL array is the single interval [tau, end) (see `stored_vis_sql`): no lambda.
    crossed = F.expr(
        f"CASE WHEN {C.vis(t)} IS NULL "
        f"THEN ({tau} > {low} AND {tau} <= {w}) OR (({end}) > {low} AND ({end}) <= {w}) "
        f"ELSE exists({C.vis(t)}, i -> (i.start > {low} AND i.start <= {w}) OR (i.`end` > {low} AND i.`end` <= {w})) "
        "END"
    )
    return due & ((F.col(C.SEQ) > step.s0) | ((F.col(C.last(t)) > low) & crossed))


def plan_step(spec: FeedSpec, tier: str, held_columns: Sequence[str], target: int, seq: int,
              log: TableLog | None = None, held_state: HeldState | None = None) -> TierStep | TierRelease:
    """The tier's step, or its final result when it is on hold or already at (W, seq).
    ``held_columns``: the held table's; ``log``: the tier's log as the caller read it (else it
    is read); ``held_state``: held's (a tier `apply` rescheduled reconciles: `HeldState.reconciles`)."""
    log = log if log is not None else TableLog.open(spec.tier_path(tier))
    state = feed_tables.tier_state(log)
    w0, s0 = state.w, state.seq
    if state.hold:
        return TierRelease(tier=tier, w_us=w0, previous_w_us=w0, seq=s0, held=True)
    check_tiers_scheduled(spec, held_columns, tiers=[tier])
    w = target if w0 is None else max(w0, target)  # the waterline never goes back
    reconcile = log.rows_changed_by_others() or (held_state is not None and held_state.reconciles(tier, state))
    if w0 is not None and w == w0 and seq == s0 and not reconcile:
        return TierRelease(tier=tier, w_us=w, previous_w_us=w0, seq=seq, next_due_us=state.next_due)
    return TierStep(tier=tier, w0=w0, s0=s0, w=w, seq=seq, n=state.n + 1, reconcile=reconcile)


def desired_rows(held: DataFrame, step: TierStep, keys: list[str], payload: list[str], scope: CandidateScope,
                 single: set[str]) -> DataFrame:
    """The tier rows the candidates must have at W: DESIGN.md rule 3, per identity.

    One grouping over the due versions of the candidate partitions finds both
    whether an identity is a candidate and its governing version (the due
    version with the greatest seq); file statistics prune versions not yet due.
    In partitions written by a single ingest each identity has one version, so
    a due candidate version governs as it is, without the grouping's shuffle.
    Versions below the scope's seq floor are not read (`CandidateScope`).
    """
    tier, w = step.tier, step.w
    carried = [F.col(c) for c in payload if c not in keys[1:]] + [F.col(C.SEQ), F.col(C.REMOVED)]
    carried.append(F.expr(stored_vis_sql(tier)).alias(C.vis(tier)))
    due = held.filter(F.col(C.tau(tier)) <= w)
    if scope.seq_floor is not None:
        due = due.filter(F.col(C.SEQ) >= scope.seq_floor)
    grouped = [p for p in scope.partitions if p not in single]
    direct = [p for p in scope.partitions if p in single]
    parts = []
    if grouped:
        parts.append(
            due.filter(F.col(C.PARTITION).isin(grouped))
            .groupBy(*keys)
            .agg(
                F.max(candidate_filter(step)).alias("_wl_candidate"),
                F.max_by(F.struct(*carried), F.col(C.SEQ)).alias("_g"),
            )
            .filter("_wl_candidate")
            .select(*keys, "_g.*")
        )
    if direct:
        parts.append(due.filter(F.col(C.PARTITION).isin(direct) & candidate_filter(step)).select(*keys, *carried))
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
            in_open = F.col(C.PARTITION).isin(sorted(known[step.tier].open_partitions))
            open_ = in_open & (F.col(C.last(step.tier)) > step.w)
            still_open = still_open | open_
            aggs += _outlook_aggs(step, open_, i)
        row = held.filter(F.col(C.PARTITION).isin(to_read)).filter(still_open).agg(*aggs).collect()[0]
    return {step.tier: _outlook(known[step.tier].next_due, known[step.tier].pending, row, i)
            for i, step in enumerate(steps)}


def _outlook_aggs(step: TierStep, open_: Column, i: int) -> list[Column]:
    """The next boundary after W and the pending count among the ``open_`` rows."""
    t, w = step.tier, step.w
    tau, end = C.tau(t), stored_end_sql(t)
    next_boundary = F.expr(  # a NULL array is [tau, end): see `stored_vis_sql`
        f"CASE WHEN {C.vis(t)} IS NULL THEN (CASE WHEN {tau} > {w} THEN {tau} "
        f"WHEN ({end}) > {w} AND ({end}) < {POS_INF} THEN {end} ELSE {POS_INF} END) "
        f"ELSE aggregate({C.vis(t)}, CAST({POS_INF} AS BIGINT), (acc, i) -> least(acc, "
        f"CASE WHEN i.start > {w} THEN i.start WHEN i.`end` > {w} AND i.`end` < {POS_INF} THEN i.`end` "
        f"ELSE {POS_INF} END)) END"
    )
    return [F.min(F.when(open_, next_boundary)).alias(f"n{i}"),
            F.count(F.when(open_ & (F.col(C.tau(t)) > w), 1)).alias(f"p{i}")]


def _outlook(next_due: int | None, pending: int, row, i: int) -> tuple[int | None, int]:
    nexts = [x for x in (next_due, row and row[f"n{i}"]) if x is not None and x < POS_INF]
    return (min(nexts) if nexts else None), pending + (row[f"p{i}"] if row else 0)
