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



from dataclasses import dataclass
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    MetadataValue,
    asset_check,
    multi_asset_check,
)

from waterline.dagster.metadata import check_metadata, timestamp
from waterline.dagster.resources import RESOURCE_KEY, WaterlineResource
from waterline.dagster.translator import HELD, WaterlineTranslator
from waterline.engine.core.results import TierAudit, WaterlineHistory
from waterline.feed import Feed
from waterline.spec import FeedSpec

EMBARGO_SAFETY = "embargo_safety"
UNIQUE_IDENTITY = "unique_identity"
MONOTONIC_WATERLINE = "monotonic_waterline"
QUARANTINE_EMPTY = "quarantine_empty"
_SAMPLE = 5


def build_tier_checks(spec: FeedSpec, translator: WaterlineTranslator, *, resource_key: str = RESOURCE_KEY):
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
        resource: WaterlineResource = getattr(context.resources, resource_key)
        feed = resource.get_feed(spec)
        for tier, result in evaluate_tier_checks(feed, wanted).items():
            yield from result_for(keys[tier], result)

    return _tier_checks


def build_quarantine_check(spec: FeedSpec, translator: WaterlineTranslator):
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

@dataclass(frozen=True)
class TierChecks:
    """What the selected checks of one tier are evaluated from: the check ``names``, the tier's
    ``audit`` (None unless embargo safety or uniqueness is selected) and its W_T ``history``
    (None unless monotonicity is selected)."""

    names: set[str]
    audit: TierAudit | None
    history: WaterlineHistory | None


def evaluate_tier_checks(feed: Feed, wanted: dict[str, set[str]]) -> dict[str, TierChecks]:
    """The selected checks of each tier: the audit (one Spark pass per tier, plans compiled once)
    when embargo safety or uniqueness is asked for, the W_T history (no Spark) for monotonicity."""
    out: dict[str, TierChecks] = {}
    spark_tiers = [t for t in feed.spec.tiers if wanted.get(t, set()) & {EMBARGO_SAFETY, UNIQUE_IDENTITY}]
    audits = feed.audit_current(spark_tiers) if spark_tiers else {}
    for tier in feed.spec.tiers:
        names = wanted.get(tier, set())
        if names:
            out[tier] = TierChecks(names=names, audit=audits.get(tier),
                                   history=feed.waterline_history(tier) if MONOTONIC_WATERLINE in names else None)
    return out


def result_for(asset_key: AssetKey, evaluated: TierChecks):
    names, audit, history = evaluated.names, evaluated.audit, evaluated.history
    if MONOTONIC_WATERLINE in names:
        yield monotonic_result(asset_key, history)
    if EMBARGO_SAFETY in names:
        yield embargo_result(asset_key, audit)
    if UNIQUE_IDENTITY in names:
        yield unique_result(asset_key, audit)


def embargo_result(asset_key: AssetKey, audit: TierAudit) -> AssetCheckResult:
    if not audit.exists:
        return AssetCheckResult(asset_key=asset_key, check_name=EMBARGO_SAFETY, passed=True,
                                description="no tier table yet", metadata={"rows": MetadataValue.int(0)})
    problems = []
    if audit.violations:
        problems.append(f"{audit.violations} row(s) not visible at W_T, e.g. {[list(r) for r in audit.early_sample]}")
    if audit.w_ahead_of_clock:
        problems.append(f"W_T is {(audit.w_us - audit.now_us) / 1e6:.3f}s ahead of the trusted clock")
    meta = check_metadata({
        "rows": audit.rows, "violations": audit.violations, "table_version": audit.version,
        "W_T_ahead_of_clock": audit.w_ahead_of_clock,
    })
    if audit.w_us is not None:
        meta["W_T"] = timestamp(audit.w_us)
        meta["W_T_us"] = MetadataValue.int(audit.w_us)
    meta["trusted_clock"] = timestamp(audit.now_us)
    if audit.early_sample:
        meta["early_rows"] = MetadataValue.json([list(r) for r in audit.early_sample])
    return AssetCheckResult(
        asset_key=asset_key, check_name=EMBARGO_SAFETY, passed=audit.embargo_safe, severity=AssetCheckSeverity.ERROR,
        description="; ".join(problems) or f"all {audit.rows} rows visible at W_T", metadata=meta,
    )


def unique_result(asset_key: AssetKey, audit: TierAudit) -> AssetCheckResult:
    if not audit.exists:
        return AssetCheckResult(asset_key=asset_key, check_name=UNIQUE_IDENTITY, passed=True,
                                description="no tier table yet")
    meta = check_metadata({"rows": audit.rows, "duplicate_identities": audit.duplicates})
    if audit.duplicate_sample:
        meta["duplicates"] = MetadataValue.json([list(r) for r in audit.duplicate_sample])
    return AssetCheckResult(
        asset_key=asset_key, check_name=UNIQUE_IDENTITY, passed=audit.duplicates == 0,
        description=(f"{audit.duplicates} identities appear more than once" if audit.duplicates
                     else "identities are unique"),
        metadata=meta,
    )


def monotonic_result(asset_key: AssetKey, history: WaterlineHistory) -> AssetCheckResult:
    meta = check_metadata({"commits_checked": len(history.commits)})
    if history.commits:
        meta["W_T"] = timestamp(history.commits[-1][1])
    if history.regressions:
        meta["regressions"] = MetadataValue.json([
            {"from_version": a, "from_w": b, "to_version": c, "to_w": d} for a, b, c, d in history.regressions[:_SAMPLE]
        ])
    return AssetCheckResult(
        asset_key=asset_key, check_name=MONOTONIC_WATERLINE, passed=history.monotonic,
        description=(f"W_T decreased {len(history.regressions)} time(s)" if history.regressions
                     else f"W_T non-decreasing over {len(history.commits)} release commit(s)"),
        metadata=meta,
    )


def quarantine_result(spec: FeedSpec) -> AssetCheckResult:
    path = spec.quarantine_path
    arrow = Feed(spec).quarantined(["_wl_partition", "_wl_reason"])  # the log alone: no Spark
    if arrow is None:
        return AssetCheckResult(passed=True, severity=AssetCheckSeverity.WARN,
                                description="no quarantine table (nothing was ever quarantined)",
                                metadata={"quarantined": MetadataValue.int(0)})
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
