"""``released_on_time``: the release proof (`waterline.Feed.audit_history`) as an asset check.

On every tier asset, one ``multi_asset_check`` per feed (``<feed>_release_proof``, one Spark
session): every release commit of the tier since the check last ran, each row it inserted or
updated against the instant the row became due, recomputed from the row and the tier's policy.
A row committed before it was due fails the check at ERROR with the row in the metadata;
commits the proof could not see (cleaned from the log, change data vacuumed) fail it at WARN.

"Since the check last ran": each evaluation records ``proven_through_us`` (the trusted clock
when it started) and the next starts there, so every commit is proven once, and a breach stays
in the check's history rather than failing every later run. The range is inclusive at both
ends, so a commit on the boundary is proven twice rather than never.

It is not part of ``<feed>_release`` (a release run stays one release); the job
``<feed>_audit`` runs it and the schedule ``<feed>_audit_schedule`` does so on the spec's
``maintenance.every``. Change data lives ``maintenance.time_travel`` after its release, so a
time travel window no shorter than ``every`` lets every release be proven before vacuum.
"""

# no `from __future__ import annotations`: Dagster reads the context annotation at definition time

from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckKey,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetSelection,
    DagsterInstance,
    DefaultScheduleStatus,
    JobDefinition,
    MetadataValue,
    ScheduleDefinition,
    define_asset_job,
    in_process_executor,
    multi_asset_check,
)

from waterline.clock import duration_text
from waterline.dagster.metadata import check_metadata, timestamp
from waterline.dagster.resources import RESOURCE_KEY, WaterlineResource
from waterline.dagster.translator import AUDIT_REPORT, WaterlineTranslator
from waterline.engine.core.results import TierProof
from waterline.spec import FeedSpec

RELEASED_ON_TIME = "released_on_time"
PROVEN_THROUGH = "proven_through_us"
_SAMPLE = 20


def audit_job_name(spec: FeedSpec) -> str:
    return f"{spec.feed}_audit"


def audit_schedule_name(spec: FeedSpec) -> str:
    return f"{spec.feed}_audit_schedule"


def proof_check_keys(spec: FeedSpec, translator: WaterlineTranslator) -> list[AssetCheckKey]:
    return [AssetCheckKey(translator.get_asset_key(spec, tier), RELEASED_ON_TIME) for tier in spec.tiers]


def build_release_proof_check(spec: FeedSpec, translator: WaterlineTranslator, *, resource_key: str = RESOURCE_KEY):
    """The ``released_on_time`` checks of ``spec``'s tiers, as one multi-asset check."""
    keys = {tier: translator.get_asset_key(spec, tier) for tier in spec.tiers}
    by_key = {key: tier for tier, key in keys.items()}
    specs = [AssetCheckSpec(RELEASED_ON_TIME, asset=key, blocking=False,
                            description=f"Every row tier {tier} released since the last check was due when its "
                            f"commit happened, under `{spec.tiers[tier]}` (the release proof).")
             for tier, key in keys.items()]

    @multi_asset_check(name=f"{spec.feed}_release_proof", specs=specs, can_subset=True,
                       required_resource_keys={resource_key},
                       description=f"The release proof of feed {spec.feed}'s tiers since the last check.")
    def _release_proof(context: AssetCheckExecutionContext):
        resource: WaterlineResource = getattr(context.resources, resource_key)
        feed = resource.get_feed(spec)
        end = feed.clock.now_us()
        # tiers whose checks last ended at the same instant (the usual case) are proven in one
        # call: the policies compile once for them
        by_start: dict[int | None, list[AssetCheckKey]] = {}
        for check_key in sorted(context.selected_asset_check_keys, key=lambda k: by_key[k.asset_key]):
            by_start.setdefault(proven_through(context.instance, check_key), []).append(check_key)
        for start, check_keys in by_start.items():
            proofs = feed.audit_history(start, end, tiers=[by_key[k.asset_key] for k in check_keys])
            for check_key in check_keys:
                yield proof_result(check_key, proofs[by_key[check_key.asset_key]], start, end)

    return _release_proof


def build_audit_job(spec: FeedSpec, translator: WaterlineTranslator) -> JobDefinition:
    """``<feed>_audit``: the ``released_on_time`` checks and the audit report (no tier is materialized)."""
    return define_asset_job(
        audit_job_name(spec),
        selection=AssetSelection.checks(*proof_check_keys(spec, translator))
        | AssetSelection.assets(translator.get_asset_key(spec, AUDIT_REPORT)),
        executor_def=in_process_executor,
        description=f"Prove feed {spec.feed}'s releases since the last proof were on time.",
        tags={"waterline/feed": spec.feed, "waterline/op": "audit"})


def build_audit_schedule(spec: FeedSpec, audit_job: JobDefinition, *,
                         default_status: DefaultScheduleStatus = DefaultScheduleStatus.STOPPED) -> ScheduleDefinition:
    """``<feed>_audit_schedule``: the audit job every ``maintenance.every``."""
    return ScheduleDefinition(name=audit_schedule_name(spec), job=audit_job, cron_schedule=spec.maintenance.cron,
                              execution_timezone="UTC", default_status=default_status,
                              description=f"Prove feed {spec.feed}'s releases every "
                              f"{duration_text(spec.maintenance.every)}.")


def proven_through(instance: DagsterInstance, check_key: AssetCheckKey) -> int | None:
    """Where the last completed evaluation of ``check_key`` ended (None: never evaluated)."""
    # newest first; this run's own evaluation is still only planned (no metadata yet)
    for record in instance.event_log_storage.get_asset_check_execution_history(check_key, limit=5):
        event = record.event.dagster_event if record.event is not None else None
        evaluation = event.event_specific_data if event is not None else None
        value = getattr(evaluation, "metadata", {}).get(PROVEN_THROUGH)
        if value is not None:
            return int(value.value)
    return None


def proof_result(check_key: AssetCheckKey, proof: TierProof, start: int | None, end: int) -> AssetCheckResult:
    """The check's result from the tier's proof over ``[start, end]``."""
    meta: dict[str, Any] = check_metadata({
        "commits_proven": len(proof.releases), "rows_released": proof.rows_released,
        "rows_deleted": proof.rows_deleted, "breaches": proof.breach_count})
    meta[PROVEN_THROUGH] = MetadataValue.int(end)
    meta["proven_through"] = timestamp(end)
    if start is not None:
        meta["proven_from"] = timestamp(start)
    if proof.least_margin_us is not None:
        meta["least_margin_seconds"] = MetadataValue.float(proof.least_margin_us / 1e6)
    if proof.breaches:
        meta["breached_rows"] = MetadataValue.json([
            {"version": b.version, "key": [str(k) for k in b.key], "seq": b.seq, "change": b.change,
             "due_us": b.due_us, "committed_before_us": b.committed_us, "W_T_us": b.w_us}
            for b in proof.breaches[:_SAMPLE]])
    if proof.unproven:
        meta["not_proven"] = MetadataValue.json([{"versions": [a, b], "why": why} for a, b, why in proof.unproven])
    since = "every retained commit" if start is None else "commits since the last check"
    if proof.verdict == "no table":
        description = "no tier table yet"
    elif proof.verdict == "BREACH":
        description = f"{proof.breach_count} row(s) released before they were due ({since})"
    elif proof.verdict == "not proven":
        description = "; ".join(f"versions {a}-{b} not proven: {why}" for a, b, why in proof.unproven)
    else:
        description = f"{len(proof.releases)} commit(s) proven on time ({since})"
    return AssetCheckResult(
        asset_key=check_key.asset_key, check_name=check_key.name, passed=proof.clean, metadata=meta,
        severity=AssetCheckSeverity.ERROR if proof.breach_count else AssetCheckSeverity.WARN,
        description=description)
