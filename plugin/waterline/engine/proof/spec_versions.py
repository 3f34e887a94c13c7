"""Which spec version judges a tier's commit: the policy in force when it was released. No JVM.

docs/semantics.md, "When the spec changes": the audit judges each commit by the spec version
it was released under, so a delay lengthened by `waterline apply` does not turn earlier honest
releases into breaches, and a delay shortened does not hide an earlier breach. A release
commit names its version (`TierState.spec`); a commit that names none was written before
commits named it (or by another writer) and is judged by the version in force when it was
written: the newest applied at or before it, else version 1 (a feed that recorded its first
version after its first releases). With no version recorded at all, every commit is judged by
the spec of the day, as before the spec was recorded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from waterline.engine.proof.commit_record import CommitRecord
from waterline.engine.tables.applied_spec import AppliedSpec
from waterline.spec import FeedSpec
from waterline.spec.release_part import normal_policy


def judged_by(records: Mapping[int, CommitRecord], history: Sequence[AppliedSpec]) -> dict[int, int | None]:
    """The spec version each commit of ``records`` (by table version) is judged by; None: the
    spec of the day (no version recorded)."""
    if not history:
        return {v: None for v in records}
    known = {a.version for a in history}
    out: dict[int, int | None] = {}
    for version, record in records.items():
        if record.spec is not None and record.spec in known:
            out[version] = record.spec
            continue
        before = [a.version for a in history if a.applied_us <= record.writer_us]
        out[version] = max(before) if before else min(known)
    return out


def tier_policies(spec: FeedSpec, tier: str, versions: set[int | None],
                  history: Sequence[AppliedSpec]) -> dict[int | None, str]:
    """The policy text of ``tier`` under each of ``versions``: the spec file's own text when
    the version's (normalised) policy is the file's, so a policy unchanged compiles as it
    always did; the recorded normalised text otherwise. A version that does not name the tier
    (never the case for its own commits) and None take the file's; for a tier the file no
    longer names (retired), the last policy recorded for it at or before that version."""
    by_number = {a.version: a for a in history}
    current = spec.tiers.get(tier)
    out: dict[int | None, str] = {}
    for version in versions:
        recorded = by_number[version].part["tiers"].get(tier) if version in by_number else None
        if recorded is None and current is None:
            recorded = _last_recorded(history, tier, version)
        if recorded is None or (current is not None and normal_policy(current) == recorded):
            if current is None:
                raise KeyError(tier)
            out[version] = current
        else:
            out[version] = recorded
    return out


def _last_recorded(history: Sequence[AppliedSpec], tier: str, version: int | None) -> str | None:
    """The newest policy of ``tier`` recorded at or before ``version`` (any version: None)."""
    named = [a.part["tiers"][tier] for a in history
             if tier in a.part.get("tiers", {}) and (version is None or a.version <= version)]
    return named[-1] if named else None


__all__ = ["judged_by", "tier_policies"]
