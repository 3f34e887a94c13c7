"""Asset checks: DESIGN.md's tier invariants, evaluated against the Delta tables.

On every tier asset (one ``multi_asset_check`` per feed, so one Spark pass):
  * ``embargo_safety`` (blocking): every row of the tier table, read at the
    version that carries W_T, is visible at W_T under the tier's compiled
    policy (``exists(vis, i -> W_T >= i.start AND W_T < i.end)``), and W_T is
    not ahead of the trusted clock;
  * ``unique_identity`` (blocking): ``(_wl_partition, key...)`` is unique;
  * ``monotonic_waterline`` (blocking): the W_T recorded in the tier table's
    Delta history never decreases (JVM-free).
On ``[feed, "held"]``: ``quarantine_empty`` (WARN), JVM-free.
"""


from typing import TYPE_CHECKING, Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    MetadataValue,
    asset_check,
    multi_asset_check,
)

from waterline.dagster import tables
from waterline.dagster.metadata import check_metadata, timestamp
from waterline.dagster.translator import HELD, WaterlineTranslator
from waterline.engine.storage import delta_table

if TYPE_CHECKING:
    from waterline.spec import FeedSpec

EMBARGO_SAFETY = "embargo_safety"
UNIQUE_IDENTITY = "unique_identity"
MONOTONIC_WATERLINE = "monotonic_waterline"
QUARANTINE_EMPTY = "quarantine_empty"
_SAMPLE = 5


def build_tier_checks(spec: "FeedSpec", translator: WaterlineTranslator, *, resource_key: str = "pyspark"):
    keys = {tier: translator.get_asset_key(spec, tier) for tier in spec.tiers}
    specs = []
    for tier, key in keys.items():
        specs += [
            AssetCheckSpec(
                EMBARGO_SAFETY, asset=key, blocking=True,
                description=f"Every row of tier {tier} is visible at its W_T under `{spec.tiers[tier]}`, "
                "and W_T is not ahead of the trusted clock.",
            ),
            AssetCheckSpec(
                UNIQUE_IDENTITY, asset=key, blocking=True,
                description=f"No two rows of tier {tier} share (_wl_partition, {', '.join(spec.key)}).",
            ),
            AssetCheckSpec(
                MONOTONIC_WATERLINE, asset=key, blocking=True,
                description=f"W_T of tier {tier} never decreases across the table's Delta history.",
            ),
        ]
    by_key = {key: tier for tier, key in keys.items()}

    @multi_asset_check(
        name=f"{spec.feed}_tier_checks",
        specs=specs,
        can_subset=True,
        required_resource_keys={resource_key},
        description=f"Embargo safety, unique identities and monotonic waterlines of feed {spec.feed}'s tiers.",
    )
    def _tier_checks(context: AssetCheckExecutionContext):
        selected = context.selected_asset_check_keys
        wanted: dict[str, set[str]] = {}
        for check_key in selected:
            wanted.setdefault(by_key[check_key.asset_key], set()).add(check_key.name)
        spark = None
        plans = None
        for tier in spec.tiers:
            names = wanted.get(tier, set())
            if not names:
                continue
            key = keys[tier]
            if MONOTONIC_WATERLINE in names:
                yield monotonic_result(spec, tier, key)
            if names & {EMBARGO_SAFETY, UNIQUE_IDENTITY}:
                if spark is None:
                    spark = getattr(context.resources, resource_key).spark_session
                facts, plans = tier_facts(spark, spec, tier, plans)
                if EMBARGO_SAFETY in names:
                    yield embargo_result(key, facts)
                if UNIQUE_IDENTITY in names:
                    yield unique_result(key, facts)

    return _tier_checks


def build_quarantine_check(spec: "FeedSpec", translator: WaterlineTranslator):
    held_key = translator.get_asset_key(spec, HELD)

    @asset_check(
        asset=held_key,
        name=QUARANTINE_EMPTY,
        blocking=False,
        description=f"Warns when feed {spec.feed}'s quarantine table holds rows (NULL keys, bad event times, late rows).",
    )
    def _quarantine_empty() -> AssetCheckResult:
        return quarantine_result(spec)

    return _quarantine_empty


# -- evaluations ---------------------------------------------------------------

def tier_facts(spark, spec: "FeedSpec", tier: str, plans=None) -> tuple[dict[str, Any], Any]:
    """One Spark pass over the tier table at the version carrying W_T."""
    from pyspark.sql import functions as F

    from waterline.clock import SystemClock
    from waterline.engine import columns as C
    from waterline.engine.schedule import compile_tiers

    path = spec.tier_path(tier)
    now = SystemClock().now_us()
    snap = tables.snapshot_state(path)
    if snap is None:
        return {"tier": tier, "exists": False, "now": now}, plans
    version, state = snap
    w = state.get("w")
    df = spark.read.format("delta").option("versionAsOf", version).load(path)
    payload = [c for c in df.columns if not C.is_system(c)]
    keys = [C.PARTITION, *spec.key]
    # Policies compile in the session time zone (UTC), exactly as ingest compiles them.
    if plans is None:
        plans = compile_tiers(spark, spec, df.select(*payload))
    vis = plans[tier].vis_sql()
    if w is None:
        visible = F.lit(False)  # nothing was released yet: any row is early
    else:
        visible = F.coalesce(F.expr(f"exists({vis}, _wl_chk -> {w} >= _wl_chk.start AND {w} < _wl_chk.`end`)"), F.lit(False))
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
    facts: dict[str, Any] = {
        "tier": tier, "exists": True, "now": now, "w": w, "version": version,
        "rows": int(row["rows"]), "violations": int(row["violations"]), "duplicates": int(row["duplicates"]),
    }
    if facts["violations"]:
        early = flagged.filter(~F.col("_wl_visible")).select(*keys).limit(_SAMPLE).collect()
        facts["early_sample"] = [list(r) for r in early]
    if facts["duplicates"]:
        dups = per_identity.filter(F.col("n") > 1).select(*keys).limit(_SAMPLE).collect()
        facts["duplicate_sample"] = [list(r) for r in dups]
    return facts, plans


def embargo_result(asset_key, facts: dict[str, Any]) -> AssetCheckResult:
    if not facts["exists"]:
        return AssetCheckResult(asset_key=asset_key, check_name=EMBARGO_SAFETY, passed=True,
                                description="no tier table yet", metadata={"rows": MetadataValue.int(0)})
    w, now = facts["w"], facts["now"]
    clock_ok = w is None or w <= now
    passed = facts["violations"] == 0 and clock_ok
    problems = []
    if facts["violations"]:
        problems.append(f"{facts['violations']} row(s) not visible at W_T, e.g. {facts.get('early_sample')}")
    if not clock_ok:
        problems.append(f"W_T is {(w - now) / 1e6:.3f}s ahead of the trusted clock")
    meta = check_metadata({
        "rows": facts["rows"], "violations": facts["violations"], "table_version": facts["version"],
        "W_T_ahead_of_clock": not clock_ok,
    })
    if w is not None:
        meta["W_T"] = timestamp(w)
        meta["W_T_us"] = MetadataValue.int(w)
    meta["trusted_clock"] = timestamp(now)
    if facts.get("early_sample"):
        meta["early_rows"] = MetadataValue.json(facts["early_sample"])
    return AssetCheckResult(
        asset_key=asset_key, check_name=EMBARGO_SAFETY, passed=passed, severity=AssetCheckSeverity.ERROR,
        description="; ".join(problems) or f"all {facts['rows']} rows visible at W_T", metadata=meta,
    )


def unique_result(asset_key, facts: dict[str, Any]) -> AssetCheckResult:
    if not facts["exists"]:
        return AssetCheckResult(asset_key=asset_key, check_name=UNIQUE_IDENTITY, passed=True,
                                description="no tier table yet")
    meta = check_metadata({"rows": facts["rows"], "duplicate_identities": facts["duplicates"]})
    if facts.get("duplicate_sample"):
        meta["duplicates"] = MetadataValue.json(facts["duplicate_sample"])
    return AssetCheckResult(
        asset_key=asset_key, check_name=UNIQUE_IDENTITY, passed=facts["duplicates"] == 0,
        description=(f"{facts['duplicates']} identities appear more than once" if facts["duplicates"]
                     else "identities are unique"),
        metadata=meta,
    )


def monotonic_result(spec: "FeedSpec", tier: str, asset_key) -> AssetCheckResult:
    history = [(v, s.get("w")) for v, s in tables.waterline_states(spec.tier_path(tier)) if s.get("w") is not None]
    regressions = [
        (prev_v, prev_w, v, w) for (prev_v, prev_w), (v, w) in zip(history, history[1:]) if w < prev_w
    ]
    meta = check_metadata({"commits_checked": len(history)})
    if history:
        meta["W_T"] = timestamp(history[-1][1])
    if regressions:
        meta["regressions"] = MetadataValue.json(
            [{"from_version": a, "from_w": b, "to_version": c, "to_w": d} for a, b, c, d in regressions[:_SAMPLE]]
        )
    return AssetCheckResult(
        asset_key=asset_key, check_name=MONOTONIC_WATERLINE, passed=not regressions,
        description=(f"W_T decreased {len(regressions)} time(s)" if regressions
                     else f"W_T non-decreasing over {len(history)} release commit(s)"),
        metadata=meta,
    )


def quarantine_result(spec: "FeedSpec") -> AssetCheckResult:
    path = spec.quarantine_path
    if not tables.is_table(path):
        return AssetCheckResult(passed=True, severity=AssetCheckSeverity.WARN,
                                description="no quarantine table (nothing was ever quarantined)",
                                metadata={"quarantined": MetadataValue.int(0)})
    arrow = delta_table(path).to_pyarrow_table(columns=["_wl_partition", "_wl_reason"])
    count = arrow.num_rows
    meta: dict[str, Any] = {"quarantined": MetadataValue.int(count), "dagster/uri": MetadataValue.path(path)}
    if count:
        grouped = arrow.group_by(["_wl_partition", "_wl_reason"]).aggregate([("_wl_reason", "count")])
        meta["by_partition_and_reason"] = MetadataValue.json(
            [{"partition": p, "reason": r, "rows": n} for p, r, n in zip(
                grouped.column("_wl_partition").to_pylist(), grouped.column("_wl_reason").to_pylist(),
                grouped.column("_wl_reason_count").to_pylist())][:50]
        )
    return AssetCheckResult(
        passed=count == 0, severity=AssetCheckSeverity.WARN, metadata=meta,
        description=f"{count} quarantined row(s)" if count else "quarantine empty",
    )
