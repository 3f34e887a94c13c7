"""A pre-staged release after its files are written: commit it at the instant, or discard it. No JVM.

`waterline.engine.spark.staging` computes, while a pre-armed run waits, each
tier's change at the due instant and writes its data and change-data files
into ``<tier>/wl-staged/<token>/`` without committing them (Delta readers see
only files a commit names). What it produced is a `StagedRelease`. At the
instant `commit_staged` takes the feed lease, checks that nothing the stage
was computed from has moved (the held table's version, every tier's version,
the waterline the clock allows), and then writes one Delta commit per tier
(`waterline.engine.log.delta_commit`); nothing is computed after the instant.
If anything moved, the stage is discarded and the caller releases the
ordinary way, which plans again from the tables as they are.

Files of a stage that never committed (a discarded stage, a crash between
staging and commit) are invisible to readers; `orphan_stages` finds them for
`waterline gc`, which deletes them once they are older than `GC_AFTER_S`. A
stage older than `MAX_STAGE_AGE_US` is never committed, so gc cannot delete
the files of a commit still to come. Held appends stage their files the same
way, under ``<held>/wl-staged/<token>/``, for the moments between Spark's
write and the commit (`orphan_tokens` finds what a crash left there).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from waterline.clock import Clock
from waterline.engine.core import faults
from waterline.engine.core.event_time import target_waterline
from waterline.engine.core.races import SkippedCommit
from waterline.engine.core.results import ReleaseResult, TierRelease
from waterline.engine.core.state import TierState
from waterline.engine.log import storage
from waterline.engine.log.delta_commit import FileActions, checkpoint_if_due, commit_tier
from waterline.engine.log.lease import Lease, feed_lease
from waterline.engine.log.objects import delete_tree, list_tree
from waterline.engine.log.table_log import APP_COMMIT, TableLog, parse_state
from waterline.spec import FeedSpec

log = logging.getLogger(__name__)

#: The folder under each tier table that holds staged files. Not hidden (no ``_``/``.``
#: prefix): Delta's own VACUUM then also deletes what a crash left there.
STAGE_DIR = "wl-staged"
#: A stage is committed within this long of being computed, or never.
MAX_STAGE_AGE_US = 30 * 60 * 1_000_000
#: `waterline gc` deletes uncommitted stages older than this (well past `MAX_STAGE_AGE_US`).
GC_AFTER_S = 2 * 3600.0


def stage_folder(spec: FeedSpec, tier: str, token: str) -> str:
    return table_stage_folder(spec.tier_path(tier), token)


def table_stage_folder(table: str, token: str) -> str:
    """The folder under ``table`` (a tier or the held table) for the files of commit ``token``."""
    return storage.join(table, STAGE_DIR, token)


@dataclass(frozen=True)
class StagedTier:
    """One tier's staged step: the state and files its one commit will carry, and what the
    release reports once that commit is made."""

    state: TierState  # the state after the release (token: the stage's)
    files: FileActions
    result: TierRelease

    @property
    def tier(self) -> str:
        return self.state.tier


@dataclass(frozen=True)
class StagedRelease:
    """A release computed for ``w_us`` from the held table at ``held_version`` and each tier at
    ``tier_versions[tier]``; ``steps`` are the tiers that move, ``settled`` those that do not."""

    feed: str
    token: str
    w_us: int
    seq: int
    held_version: int
    tier_versions: dict[str, int]
    staged_at_us: int
    steps: tuple[StagedTier, ...]
    settled: tuple[TierRelease, ...] = ()

    @property
    def files(self) -> int:
        return sum(len(s.files.adds) + len(s.files.cdcs) for s in self.steps)


def still_valid(spec: FeedSpec, staged: StagedRelease, now_us: int) -> str | None:
    """Why the stage no longer applies at ``now_us`` (read from the logs), or None."""
    if now_us - staged.staged_at_us > MAX_STAGE_AGE_US:
        return "stage too old"
    held = TableLog.open(spec.held_path)
    if held.version != staged.held_version:
        return f"held table moved (version {staged.held_version} -> {held.version})"
    if target_waterline(spec, held.held_state(spec.feed), now_us, staged.w_us) != staged.w_us:
        return "the waterline the clock allows is below the staged one"
    for tier, version in staged.tier_versions.items():
        now = TableLog.open(spec.tier_path(tier)).version
        if now != version:
            return f"tier {tier} moved (version {version} -> {now})"
    return None


def commit_staged(spec: FeedSpec, staged: StagedRelease, *, clock: Clock, lease: Lease,
                  now_us: int | None = None) -> ReleaseResult | None:
    """Under the feed lease: one commit per moving tier, or None (nothing committed by this call
    for the tier that failed, and the caller must release the ordinary way) when the stage no
    longer applies or another writer took a tier's next version. ``now_us``: the clock reading
    the caller made under this lease (else the clock is read)."""
    reason = still_valid(spec, staged, clock.now_us() if now_us is None else now_us)
    if reason is not None:
        log.info("feed %s: staged release %s not committed: %s", spec.feed, staged.token, reason)
        return None
    faults.boundary(faults.STAGED_BEFORE_COMMIT)
    results = {r.tier: r for r in staged.settled}
    committed: list[tuple[TableLog, int]] = []
    for i, step in enumerate(staged.steps):
        faults.boundary(faults.RELEASE_BEFORE_MERGE if i == 0 else faults.RELEASE_BETWEEN_TIERS)
        lease.check()  # the last moment a lost lease can stop the commit
        tier_log = TableLog.open(spec.tier_path(step.tier), version=staged.tier_versions[step.tier])
        _check_applies(tier_log, step.state)
        version = commit_tier(tier_log, step.files, step.state, app=APP_COMMIT)
        if version is None:
            log.info("feed %s: tier %s version %s taken by another writer", spec.feed, step.tier,
                     staged.tier_versions[step.tier] + 1)
            return None
        committed.append((tier_log, version))
        results[step.tier] = step.result
    for tier_log, version in committed:
        checkpoint_if_due(tier_log, version)
    ordered = {t: results[t] for t in spec.tiers if t in results}
    w = max([staged.w_us] + [r.w_us for r in ordered.values() if not r.held and r.w_us is not None])
    return ReleaseResult(feed=spec.feed, requested_us=staged.w_us, w_us=w, seq=staged.seq, tiers=ordered)


def _check_applies(tier_log: TableLog, state: TierState) -> None:
    """A step that would take W_T back was computed from a stale state (a step whose commit
    number was already used is refused by `commit_tier`, as Delta refuses a replay)."""
    current = tier_log.tier_state()
    if current.w is not None and state.w is not None and state.w < current.w:
        raise SkippedCommit(f"{tier_log.path}: staged commit n={state.n} W_T={state.w} is stale (W_T={current.w})")


def release_staged(spec: FeedSpec, staged: StagedRelease, *, clock: Clock) -> ReleaseResult | None:
    """Take the feed lease and `commit_staged`; a stage that did not commit is discarded (None)."""
    with feed_lease(spec.feed_dir, feed=spec.feed) as lease:
        try:
            result = commit_staged(spec, staged, clock=clock, lease=lease)
        except SkippedCommit as exc:  # the ordinary release after this plans from the new state
            log.info("feed %s: staged release %s not committed: %s", spec.feed, staged.token, exc)
            result = None
    if result is None:
        discard(spec, staged)
    return result


def discard(spec: FeedSpec, staged: StagedRelease) -> None:
    """Delete the stage's files (best effort: `waterline gc` deletes what this leaves)."""
    for step in staged.steps:
        try:
            delete_tree(stage_folder(spec, step.tier, staged.token))
        except Exception as exc:  # noqa: BLE001
            log.warning("feed %s: staged files of %s left for gc: %s", spec.feed, staged.token, exc)


def orphan_stages(spec: FeedSpec, *, now_s: float, older_than_s: float = GC_AFTER_S) -> dict[str, list[str]]:
    """Per tier, the stage folders safe to delete (`orphan_tokens`)."""
    out = {tier: orphan_tokens(spec.tier_path(tier), now_s=now_s, older_than_s=older_than_s) for tier in spec.tiers}
    return {t: tokens for t, tokens in out.items() if tokens}


def orphan_tokens(table: str, *, now_s: float, older_than_s: float = GC_AFTER_S) -> list[str]:
    """The stage folders under ``table`` safe to delete: never committed and older than ``older_than_s``.

    A stage counts as committed if a retained commit carries its token. A stage older than the
    oldest retained commit cannot be told apart from one whose commit log cleanup removed, so it
    is kept (Delta's VACUUM removes its files once they are unreferenced and past retention).
    """
    objects = list_tree(storage.join(table, STAGE_DIR))
    if not objects:
        return []
    newest: dict[str, float] = {}
    for o in objects:
        token = o.relative.split("/", 1)[0]
        newest[token] = max(newest.get(token, 0.0), o.modified_s)
    table_log = TableLog.open(table)
    history = table_log.history(max((table_log.version or 0) + 1, 1))
    tokens = {s.get("token") for c in history if (s := parse_state(c.get("userMetadata"))) is not None}
    oldest_commit_s = min((c.get("timestamp", 0) for c in history), default=0) / 1000
    return sorted(
        token for token, modified in newest.items()
        if token not in tokens and now_s - modified > older_than_s and modified > oldest_commit_s
    )
