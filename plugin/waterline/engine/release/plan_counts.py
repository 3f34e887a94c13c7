"""`waterline plan`'s counts of a pending spec change: what the next release (or an apply's
first release of a new tier) does to each new or changed tier, computed by the engine that
will do it, read only (no lease, nothing written).

For each such tier, held's schedule is computed again in memory exactly as `apply` writes it
(`respec.with_schedule`: the new policy's visibility, the rows the tier shows at its W_T kept),
and one aggregation over held compares the governing version of every identity at W with
the tier's rows now. W is the W the tier's next release reaches at least: the feed's W (the
greatest W_T of any of its tiers; the W an apply builds a new tier at), or the tier's own W_T
when it is ahead. A release that runs later reaches a later W and also shows what becomes due
between the two; these counts are what the change itself does, at once (docs/operations.md).
"""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from waterline.engine.core import columns as C
from waterline.engine.delta.table_log import TableLog
from waterline.engine.release.respec import with_schedule
from waterline.engine.tables import applied_spec, feed_tables
from waterline.engine.tables.schedule import compile_tiers
from waterline.engine.tables.spark_tables import read_delta
from waterline.policy import vis_sql
from waterline.policy.render import VIS_TYPE
from waterline.spec import FeedSpec
from waterline.spec.release_part import ChangeCounts, SpecDiff, TierCounts, release_part

_RAW = "_wl_plan_raw"  # the new policy's own visibility, before the kept rows' rule
_G = "_wl_plan_g"


def count_changes(spark: SparkSession, spec: FeedSpec, diff: SpecDiff, base: ChangeCounts) -> ChangeCounts:
    """``base`` (the counts without Spark) with each new and changed tier of ``diff`` counted
    (see the module); ``base`` as it is, with a note, when the feed has no release yet."""
    tiers = [t for t in diff.tiers_scheduled_anew if t in spec.tiers]
    if not tiers:
        return base
    feed_w = applied_spec.feed_waterline(spec)
    if feed_w is None or not TableLog.open(spec.held_path).exists:
        return replace(base, note="not counted: the feed has no release yet (its first release schedules every "
                                  "tier from held under the applied spec)")
    held = _with_added_columns(read_delta(spark, spec.held_path), spec, diff)
    payload = held.select([c for c in held.columns if not C.is_system(c)])
    plans = compile_tiers(spark, spec, payload, tiers=tiers)
    return replace(base, tiers={t: tier_counts(spark, spec, held, t, vis_sql(plans[t]), feed_w) for t in tiers})


def _with_added_columns(held: DataFrame, spec: FeedSpec, diff: SpecDiff) -> DataFrame:
    """``held`` as `apply` leaves it: each column the change adds, NULL in every version held
    (a policy that names one is counted as the apply and the next release will see it)."""
    types = release_part(spec).get("columns") or {}
    for column in diff.columns_added:
        if column not in held.columns and column in types:
            held = held.withColumn(column, F.lit(None).cast(types[column]))
    return held


def tier_counts(spark: SparkSession, spec: FeedSpec, held: DataFrame, tier: str, vis: str, feed_w: int) -> TierCounts:
    """One tier's counts at the W its next release reaches at least (see the module): one
    aggregation over ``held`` rescheduled for the policy visibility ``vis`` (SQL), joined with
    the tier's rows."""
    log = TableLog.open(spec.tier_path(tier))
    state = feed_tables.tier_state(log) if log.exists else None
    w = feed_w if state is None or state.w is None else max(state.w, feed_w)
    empty = f"CAST(array() AS {VIS_TYPE})"
    raw = held.withColumn(_RAW, F.expr(f"CASE WHEN {C.REMOVED} THEN {empty} ELSE {vis} END"))
    out = with_schedule(spark, spec, raw, tier, vis)
    keys = [C.PARTITION, *spec.key]
    carried = F.struct(F.col(C.SEQ), F.col(C.REMOVED), F.col(C.vis(tier)).alias("vis"), F.col(_RAW).alias("raw"))
    at_w = f"{w} >= i.start AND {w} < i.`end`"
    governing = (out.filter(F.col(C.tau(tier)) <= w).groupBy(*keys)
                 .agg(F.max_by(carried, F.col(C.SEQ)).alias(_G))
                 .select(*keys, F.col(f"{_G}.{C.SEQ}").alias("seq"),
                         (~F.col(f"{_G}.{C.REMOVED}") & F.expr(f"exists({_G}.vis, i -> {at_w})")).alias("present"),
                         F.expr(f"try_element_at(filter({_G}.vis, i -> {at_w}), 1).`end`").alias("new_end"),
                         F.expr(f"exists({_G}.raw, i -> {at_w})").alias("raw_present")))
    if state is not None and state.w is not None:
        shown = read_delta(spark, spec.tier_path(tier)).select(
            *keys, F.col(C.SEQ).alias("shown_seq"), F.col(C.END).alias("shown_end"))
        joined = governing.join(shown, on=keys, how="full")
    else:
        joined = governing.withColumn("shown_seq", F.lit(None).cast("bigint")).withColumn(
            "shown_end", F.lit(None).cast("bigint"))
    present = F.coalesce(F.col("present"), F.lit(False))
    same = F.col("shown_seq").isNotNull() & (F.col("shown_seq") == F.col("seq"))
    row = joined.agg(
        F.count(F.when(present & ~F.coalesce(same, F.lit(False)), 1)).alias("due"),
        F.count(F.when(F.col("shown_seq").isNotNull() & ~present, 1)).alias("withdrawn"),
        F.count(F.when(present & same & ~F.col("raw_present"), 1)).alias("kept"),
        F.count(F.when(present & same & (F.col("new_end") < F.col("shown_end")), 1)).alias("sooner"),
    ).collect()[0]
    return TierCounts(w_us=w, due=row["due"], withdrawn=row["withdrawn"], kept=row["kept"], sooner=row["sooner"],
                      on_hold=bool(state and state.hold))


__all__ = ["count_changes", "tier_counts"]
