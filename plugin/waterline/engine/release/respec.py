"""`waterline apply` on a live feed: held rescheduled for a new or changed policy, a new tier
built at the feed's W (docs/semantics.md, "When the spec changes"; the model is
`waterline.semantics.spec_history.SpecHistory`).

Held carries each version's schedule per tier (`_wl_vis__T`, `_wl_tau__T`, `_wl_last__T`),
computed at ingest from the policy then in force. At an apply, under the feed lease:

1. *Reschedule* (`reschedule_held`): the tiers whose schedule in held is not the spec's
   (`applied_spec.stale_schedules`: a new tier, a changed policy) get theirs computed again
   for every held version, in one overwrite of held (one Delta commit, its state naming the
   policies held's schedule is now for). For a changed policy, each row the tier shows at its
   W_T is **kept**: its visibility under the new policy united with [W_T, end of the first
   interval of that visibility ending after W_T) (`kept_vis_sql`), so it stays until the new
   policy's own rules remove it. Nothing becomes visible before the apply: the tiers are not
   released here, and every release after it commits after the apply's instant.
2. *Build* (`build_new_tiers`): each tier never released gets its first release at the
   feed's W (the greatest W_T of any tier the feed ever had): what its policy shows there.
3. The spec version is recorded (`applied_spec.apply_spec`), last.

A kill anywhere leaves either nothing or a held whose state names policies that differ from
the applied spec's; every publishing operation refuses that (`applied_spec.check_applied`)
until `apply` is run again, which redoes what is missing (1 and 2 are idempotent: the kept
rows are read from the tier tables, which nothing moved since). Versions `gc` deleted are
not there to schedule: a new or rescheduled tier never shows them (their identity shows
nothing until a version held still has governs), the rule docs/semantics.md states.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from waterline.clock import Clock, SystemClock
from waterline.engine.core import columns as C
from waterline.engine.core import faults
from waterline.engine.core.races import new_token
from waterline.engine.core.state import HeldState
from waterline.engine.core.sqltext import delta_path, sql_string
from waterline.engine.delta.table_log import APP_COMMIT, TableLog
from waterline.engine.release.release import release_locked
from waterline.engine.spark.commits import commit_state, record_state
from waterline.engine.tables import applied_spec, feed_tables
from waterline.engine.tables.applied_spec import AppliedSpec, SpecDiff
from waterline.engine.tables.lease import Lease
from waterline.engine.tables.schedule import compile_tiers, takeover_and_last_sql
from waterline.engine.tables.spark_tables import read_delta
from waterline.policy import vis_sql
from waterline.policy.render import VIS_TYPE
from waterline.spec import FeedSpec
from waterline.spec.release_part import normal_policy

_EMPTY_VIS = f"CAST(array() AS {VIS_TYPE})"
_STATS = "delta.dataSkippingStatsColumns"
_SHOWN = "_wl_shown"


def apply(spark: SparkSession, spec: FeedSpec, *, clock: Clock | None = None) -> tuple[AppliedSpec, SpecDiff]:
    """`Feed.apply` when the change needs Spark: held rescheduled, new tiers built at the
    feed's W, then the version recorded (see the module)."""
    clock = clock or SystemClock()

    def prepare(lease: Lease, stale: list[str], current: AppliedSpec | None) -> None:
        if stale:
            reschedule_held(spark, spec, stale, lease)
        faults.boundary(faults.APPLY_AFTER_RESCHEDULE)
        # the new tiers' first commits name the version this apply records next
        _, diff = applied_spec.pending_changes(spec)
        version = 1 if current is None else current.version + (1 if diff else 0)
        build_new_tiers(spark, spec, lease, clock=clock, spec_version=version)
        faults.boundary(faults.APPLY_BEFORE_RECORD)

    return applied_spec.apply_spec(spec, clock.now_us(), reschedule=prepare)


def build_new_tiers(spark: SparkSession, spec: FeedSpec, lease: Lease, *, clock: Clock,
                    spec_version: int | None = None) -> None:
    """Release every tier never released to the feed's W (a fresh tier's state there), under
    ``spec_version`` (the version the apply records next)."""
    new = applied_spec.unbuilt_tiers(spec)
    if new:
        release_locked(spark, spec, lease, as_of_us=applied_spec.feed_waterline(spec), clock=clock, tiers=new,
                       spec_version=spec_version)


def reschedule_held(spark: SparkSession, spec: FeedSpec, tiers: list[str], lease: Lease) -> None:
    """Compute ``tiers``' schedule columns again for every held version, in one commit of held
    whose state names the policies they are now for (see the module)."""
    log = TableLog.open(spec.held_path)
    state = feed_tables.held_state(log, spec.feed)
    _add_columns(spark, spec, log, [t for t in tiers if C.tau(t) not in {n for n, _ in log.columns()}])
    held = read_delta(spark, spec.held_path)
    payload = held.select([c for c in held.columns if not C.is_system(c)])
    plans = compile_tiers(spark, spec, payload, tiers=tiers)
    out, rescheduled = held, dict(state.rescheduled)
    for tier in tiers:
        out = with_schedule(spark, spec, out, tier, vis_sql(plans[tier]))
        tier_log = TableLog.open(spec.tier_path(tier))
        if tier_log.exists:  # its next release recomputes every identity (`HeldState.reconciles`)
            rescheduled[tier] = feed_tables.tier_state(tier_log).n
    n = state.n + 1
    policies = {**state.policies, **{t: normal_policy(spec.tiers[t]) for t in tiers}}
    new_state = state.evolve(op="apply", n=n, token=new_token(), policies=policies, rescheduled=rescheduled)
    lease.check()
    with commit_state(spark, new_state, app=APP_COMMIT, version=n):
        (out.select(*held.columns).write.format("delta").mode("overwrite")
         .partitionBy(C.PARTITION).save(spec.held_path))
    record_state(spark, spec.held_path, new_state)  # findable after log cleanup, like every held state


def _add_columns(spark: SparkSession, spec: FeedSpec, log: TableLog, tiers: list[str]) -> None:
    """Held gains a new tier's schedule columns (NULL until rescheduled; no tier reads them
    before the apply records its version) and keeps file statistics on them."""
    if not tiers:
        return
    state = log.latest_state()
    table = delta_path(spec.held_path)
    added = ", ".join(f"{C.vis(t)} {VIS_TYPE}, {C.tau(t)} BIGINT, {C.last(t)} BIGINT" for t in tiers)
    stats = [c for c in (log.configuration.get(_STATS) or "").split(",") if c]
    stats += [c for t in tiers for c in (C.tau(t), C.last(t)) if c not in stats]
    with _same_state(spark, state):
        spark.sql(f"ALTER TABLE {table} ADD COLUMNS ({added})")
    with _same_state(spark, state):
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('{_STATS}' = {sql_string(','.join(stats))})")


def _same_state(spark: SparkSession, raw: dict | None):
    """The held state of the commit made in the block: the current one, unchanged."""
    return commit_state(spark, HeldState.from_json(raw) if raw else HeldState())


def with_schedule(spark: SparkSession, spec: FeedSpec, held: DataFrame, tier: str, vis: str) -> DataFrame:
    """``held`` with ``tier``'s schedule computed from the policy visibility ``vis`` (SQL), the
    rows the tier shows at its W_T kept (`kept_vis_sql`); removals are never visible."""
    out = held.withColumn(C.vis(tier), F.expr(f"CASE WHEN {C.REMOVED} THEN {_EMPTY_VIS} ELSE {vis} END"))
    path = spec.tier_path(tier)
    log = TableLog.open(path)
    w = feed_tables.tier_state(log).w if log.exists else None
    if w is not None:
        keys = [C.PARTITION, *spec.key, C.SEQ]
        shown = read_delta(spark, path).select(*keys).withColumn(_SHOWN, F.lit(True))
        kept = F.expr(kept_vis_sql(C.vis(tier), w))
        out = (out.join(shown, on=keys, how="left")
               .withColumn(C.vis(tier), F.when(F.col(_SHOWN), kept).otherwise(F.col(C.vis(tier))))
               .drop(_SHOWN))
    tau, last = takeover_and_last_sql(C.vis(tier))
    return out.withColumn(C.tau(tier), F.expr(tau)).withColumn(C.last(tier), F.expr(last))


def kept_vis_sql(vis: str, w: int) -> str:
    """SQL: the visibility array ``vis`` (sorted, disjoint, merged) united with the kept
    interval [w, end of its first interval ending after w), merged again; ``vis`` itself when
    no interval ends after w (the new policy never shows the row again: the next release
    removes it). `waterline.semantics.spec_history.kept_interval` is the model."""
    after = f"filter({vis}, i -> i.`end` > {w})"
    touching = f"aggregate(filter({vis}, i -> i.`end` = {w}), CAST(NULL AS BIGINT), (acc, i) -> i.start)"
    first = f"element_at({after}, 1)"
    merged = f"named_struct('start', least({first}.start, coalesce({touching}, {w})), 'end', {first}.`end`)"
    united = f"concat(filter({vis}, i -> i.`end` < {w}), array({merged}), slice({after}, 2, size({vis})))"
    return f"CASE WHEN size({after}) = 0 THEN {vis} ELSE CAST({united} AS {VIS_TYPE}) END"


__all__ = ["apply", "build_new_tiers", "kept_vis_sql", "reschedule_held", "with_schedule"]
