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

from typing import TYPE_CHECKING

from waterline.clock import SystemClock
from waterline.engine import columns as C
from waterline.engine.commits import commit_state, table_exists
from waterline.engine.event_time import target_waterline
from waterline.engine.lease import feed_lease
from waterline.engine.sqltext import sql_string
from waterline.engine.results import ReleaseResult, TierRelease
from waterline.engine.tables import held_state, read_delta, tier_state
from waterline.errors import WaterlineError
from waterline.semantics import NEG_INF, POS_INF

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from waterline.spec import FeedSpec

_PRESENT = "_wl_present"
_REASON = "_wl_reason"
_RETRIES = 3


def release(spark: "SparkSession", spec: "FeedSpec", *, as_of_us: int | None = None, clock=None) -> ReleaseResult:
    """Advance every tier not on hold to W and publish what became due."""
    clock = clock or SystemClock()
    with feed_lease(spec.feed_dir, feed=spec.feed):
        now = clock.now_us()
        hstate = held_state(spec)
        seq = hstate.get("seq", 0)
        target = target_waterline(spec, hstate, now, as_of_us)
        results = {}
        if table_exists(spec.held_path):
            held = read_delta(spark, spec.held_path).filter(f"{C.SEQ} <= {seq}")
            for tier in spec.tiers:
                results[tier] = _release_tier_with_retries(spark, spec, tier, held, target, seq)
        w = max([target] + [r.w_us for r in results.values() if not r.held])
        return ReleaseResult(feed=spec.feed, requested_us=as_of_us, w_us=w, seq=seq, tiers=results)


def _release_tier_with_retries(spark, spec, tier, held, target, seq) -> TierRelease:
    for attempt in range(_RETRIES):
        try:
            return _release_tier(spark, spec, tier, held, target, seq)
        except Exception as exc:  # Delta's optimistic concurrency: recompute from the new state
            if attempt == _RETRIES - 1 or "Concurrent" not in type(exc).__name__ + str(exc)[:200]:
                raise
    raise AssertionError("unreachable")


def _release_tier(spark, spec: "FeedSpec", tier: str, held: "DataFrame", target: int, seq: int) -> TierRelease:
    from pyspark.sql import functions as F

    state = tier_state(spec, tier)
    w0, s0 = state["w"], state["seq"]
    if state["hold"]:
        return TierRelease(tier=tier, w_us=w0 if w0 is not None else NEG_INF, previous_w_us=w0, seq=s0, held=True)
    if C.tau(tier) not in held.columns:
        raise WaterlineError(
            f"feed {spec.feed}: tier {tier} is newer than the held data; re-ingest the partitions to schedule it"
        )
    w = target if w0 is None else max(w0, target)
    if w0 is not None and w == w0 and seq == s0:
        return TierRelease(tier=tier, w_us=w, previous_w_us=w0, seq=seq, next_due_us=state.get("next_due"))
    low = NEG_INF if w0 is None else w0

    keys = [C.PARTITION, *spec.key]
    vis, tau, last = F.col(C.vis(tier)), F.col(C.tau(tier)), F.col(C.last(tier))
    boundary_crossed = F.expr(
        f"exists({C.vis(tier)}, i -> (i.start > {low} AND i.start <= {w}) OR (i.`end` > {low} AND i.`end` <= {w}))"
    )
    candidates = held.filter(
        ((F.col(C.SEQ) > s0) & (tau <= w)) | ((tau <= w) & (last > low) & boundary_crossed)
    ).select(*keys).distinct()
    partitions = [r[0] for r in candidates.select(C.PARTITION).distinct().collect()]

    payload = [c for c in held.columns if not C.is_system(c)]
    metrics = {"inserted": 0, "updated": 0, "deleted": 0}
    reasons: dict[str, int] = {}
    next_due, pending = _outlook(held, tier, w)
    new_state = {"op": "release", "tier": tier, "w": w, "seq": seq, "hold": False,
                 "next_due": next_due, "pending": pending}
    with commit_state(spark, new_state):
        if partitions:
            desired = _desired(held, tier, keys, payload, candidates, partitions, w).cache()
            try:
                reasons = {r[_REASON]: r["n"] for r in desired.groupBy(_REASON).agg(F.count(F.lit(1)).alias("n")).collect()}
                metrics = _merge(spark, spec, tier, desired, keys, payload, partitions)
            finally:
                desired.unpersist()
        else:
            _state_only_commit(spark, spec.tier_path(tier))
    return TierRelease(
        tier=tier, w_us=w, previous_w_us=w0, seq=seq,
        released=metrics["inserted"], updated=metrics["updated"], removed=metrics["deleted"],
        expired=reasons.get("expired", 0), candidates=sum(reasons.values()),
        next_due_us=next_due, changed=any(metrics.values()),
    )


def _desired(held, tier, keys, payload, candidates, partitions, w) -> "DataFrame":
    """The tier rows the candidates must have at W: DESIGN.md rule 3, per identity."""
    from pyspark.sql import functions as F

    versions = held.filter(F.col(C.PARTITION).isin(partitions)).join(candidates, on=keys, how="left_semi")
    carried = [c for c in payload if c not in keys[1:]] + [C.SEQ, C.REMOVED, C.vis(tier)]
    governing = (
        versions.filter(F.col(C.tau(tier)) <= w)
        .groupBy(*keys)
        .agg(F.max_by(F.struct(*[F.col(c) for c in carried]), F.col(C.SEQ)).alias("_g"))
        .select(*keys, "_g.*")
    )
    now_in = f"filter({C.vis(tier)}, i -> {w} >= i.start AND {w} < i.`end`)"
    return (
        governing.withColumn("_wl_now", F.expr(f"try_element_at({now_in}, 1)"))
        .withColumn(_PRESENT, ~F.col(C.REMOVED) & F.col("_wl_now").isNotNull())
        .withColumn(C.START, F.col("_wl_now.start"))
        .withColumn(C.END, F.col("_wl_now.end"))
        .withColumn(
            _REASON,
            F.when(F.col(_PRESENT), "present")
            .when(F.col(C.REMOVED) | (F.size(C.vis(tier)) == 0), "removed")
            .when(F.expr(f"try_element_at({C.vis(tier)}, -1).`end` <= {w}"), "expired")
            .otherwise("between"),
        )
        .drop("_wl_now", C.vis(tier), C.REMOVED)
    )


def _merge(spark, spec, tier, desired, keys, payload, partitions) -> dict[str, int]:
    from delta.tables import DeltaTable

    target = DeltaTable.forPath(spark, spec.tier_path(tier))
    in_partitions = ", ".join(sql_string(p) for p in partitions)
    on = " AND ".join([f"t.`{k}` = s.`{k}`" for k in keys] + [f"t.{C.PARTITION} IN ({in_partitions})"])
    columns = payload + [C.PARTITION, C.SEQ, C.START, C.END]
    values = {f"`{c}`": f"s.`{c}`" for c in columns}
    changed = f"t.{C.SEQ} <> s.{C.SEQ} OR t.{C.START} <> s.{C.START} OR t.{C.END} <> s.{C.END}"
    (
        target.alias("t").merge(desired.alias("s"), on)
        .whenMatchedDelete(condition=f"NOT s.{_PRESENT}")
        .whenMatchedUpdate(condition=f"s.{_PRESENT} AND ({changed})", set=values)
        .whenNotMatchedInsert(condition=f"s.{_PRESENT}", values=values)
        .execute()
    )
    m = target.history(1).collect()[0]["operationMetrics"] or {}
    return {
        "inserted": int(m.get("numTargetRowsInserted", 0)),
        "updated": int(m.get("numTargetRowsUpdated", 0)),
        "deleted": int(m.get("numTargetRowsDeleted", 0)),
    }


def _outlook(held: "DataFrame", tier: str, w: int) -> tuple[int | None, int]:
    """The next instant after W at which some version's visibility changes, and pending versions."""
    from pyspark.sql import functions as F

    next_boundary = (
        f"aggregate({C.vis(tier)}, CAST({POS_INF} AS BIGINT), (acc, i) -> least(acc, "
        f"CASE WHEN i.start > {w} THEN i.start WHEN i.`end` > {w} AND i.`end` < {POS_INF} THEN i.`end` "
        f"ELSE {POS_INF} END))"
    )
    row = held.filter(F.col(C.last(tier)) > w).agg(
        F.min(F.expr(next_boundary)).alias("next"),
        F.count(F.when(F.col(C.tau(tier)) > w, 1)).alias("pending"),
    ).collect()[0]
    nxt = row["next"]
    return (None if nxt is None or nxt >= POS_INF else nxt), row["pending"]


def _state_only_commit(spark, path: str) -> None:
    """Record a new (W, S) with no row change: an empty append still makes a commit."""
    schema = spark.read.format("delta").load(path).schema
    spark.createDataFrame([], schema).write.format("delta").mode("append").save(path)

