"""Audit a tier table against DESIGN.md's invariants: one Spark pass per tier.

Embargo safety: every row of the tier, read at the version whose state carries
W_T, is visible at W_T under the tier's compiled policy, and W_T is not ahead of
the trusted clock. Unique identities: ``(_wl_partition, key...)`` is unique.
The state is read with `feed_tables.tier_state` (the property and the retained history, so a
table whose old commits were cleaned up is judged by its real W_T).
"""

from __future__ import annotations

from typing import Mapping

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from waterline.clock import Clock, SystemClock
from waterline.engine.core import columns as C
from waterline.engine.core.results import TierAudit
from waterline.engine.delta.table_log import TableLog
from waterline.engine.proof.commit_record import commit_records
from waterline.engine.proof.spec_versions import judged_by
from waterline.engine.tables import applied_spec
from waterline.engine.tables.feed_tables import FeedTables, tier_state
from waterline.engine.tables.schedule import compile_tiers
from waterline.policy import ReleasePlan, vis_sql
from waterline.spec import FeedSpec

_SAMPLE = 5
_KEPT = "_wl_kept"


def audit_tier(spark: SparkSession, spec: FeedSpec, tier: str, *, clock: Clock | None = None,
               plans: Mapping[str, ReleasePlan] | None = None) -> tuple[TierAudit, Mapping[str, ReleasePlan] | None]:
    """The tier's audit, and the compiled plans (pass them back in for the next tier: one compile)."""
    now = (clock or SystemClock()).now_us()
    log = FeedTables.open(spec).tier(tier)
    if not log.exists:
        return TierAudit(tier=tier, exists=False, now_us=now), plans
    w = tier_state(log).w
    df = spark.read.format("delta").option("versionAsOf", log.version).load(log.path)
    payload = [c for c in df.columns if not C.is_system(c)]
    keys = [C.PARTITION, *spec.key]
    # Policies compile in the session time zone (UTC), exactly as ingest compiles them.
    if plans is None:
        plans = compile_tiers(spark, spec, df.select(*payload))
    vis = vis_sql(plans[tier])
    if w is None:
        visible = F.lit(False)  # nothing was released yet: any row is early
    else:
        visible = F.coalesce(F.expr(f"exists({vis}, _wl_chk -> {w} >= _wl_chk.start AND {w} < _wl_chk.`end`)"),
                             F.lit(False))
        df, visible = _with_kept(spark, spec, tier, log, (df, visible), vis, w)
    flagged = df.withColumn("_wl_visible", visible)
    per_identity = flagged.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("n"),
        F.count(F.when(~F.col("_wl_visible"), 1)).alias("bad"),
    )
    row = per_identity.agg(
        F.coalesce(F.sum("n"), F.lit(0)).alias("rows"),
        F.coalesce(F.sum("bad"), F.lit(0)).alias("violations"),
        F.count(F.when(F.col("n") > 1, 1)).alias("duplicates"),
    ).collect()[0]
    violations, duplicates = int(row["violations"]), int(row["duplicates"])
    early = flagged.filter(~F.col("_wl_visible")).select(*keys).limit(_SAMPLE).collect() if violations else []
    dups = per_identity.filter(F.col("n") > 1).select(*keys).limit(_SAMPLE).collect() if duplicates else []
    return TierAudit(
        tier=tier, exists=True, now_us=now, w_us=w, version=log.version, rows=int(row["rows"]),
        violations=violations, duplicates=duplicates,
        early_sample=tuple(tuple(r) for r in early), duplicate_sample=tuple(tuple(r) for r in dups),
    ), plans


def _with_kept(spark: SparkSession, spec: FeedSpec, tier: str, log: TableLog, shown: tuple[DataFrame, Column],
               vis: str, w: int) -> tuple[DataFrame, Column]:
    """The tier's rows and their "visible at ``w``" flag, a row the tier kept across the apply
    of its policy counted as visible: the same identity and version, shown by the tier's last
    commit before the policy took effect, until the end of the policy's first interval for it
    ending after that commit's W_T (docs/semantics.md, "When the spec changes"). Its release
    was judged under the policy of its day (`audit_history`); it is not early now."""
    df, visible = shown
    before = _last_commit_before_policy(spec, tier, log)
    if before is None:
        return df, visible
    version, w_before = before
    keys = [C.PARTITION, *spec.key, C.SEQ]
    try:
        then = spark.read.format("delta").option("versionAsOf", version).load(log.path)
    except AnalysisException:  # that version was cleaned from the log: nothing is taken as kept
        return df, visible
    first_end = f"element_at(filter({vis}, _wl_i -> _wl_i.`end` > {w_before}), 1).`end`"
    kept = F.coalesce(F.col(_KEPT) & F.expr(f"{w} < {first_end}"), F.lit(False))
    return (df.join(then.select(*keys).withColumn(_KEPT, F.lit(True)), on=keys, how="left"),
            visible | kept)


def _last_commit_before_policy(spec: FeedSpec, tier: str, log: TableLog) -> tuple[int, int] | None:
    """The tier's last release commit (version, W_T) under a spec version whose policy for the
    tier differs from the one its newest release was released under; None when the tier was
    always released under one policy (or no version was recorded)."""
    history = applied_spec.history(spec)
    records, _ = commit_records(log)
    releases = {v: r for v, r in records.items() if r.w_us is not None}
    if not history or not releases:
        return None
    judged = judged_by(releases, history)
    parts = {a.version: a.part.get("tiers", {}) for a in history}

    def policy(number: int | None) -> str | None:
        return parts.get(number, {}).get(tier) if number is not None else None

    now = judged[max(releases)]
    earlier = [v for v, n in judged.items() if n is not None and now is not None and n < now
               and policy(n) != policy(now)]
    if not earlier:
        return None
    last = max(earlier)
    return last, releases[last].w_us
