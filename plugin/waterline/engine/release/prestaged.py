"""A pre-staged release after its files are written: commit it at the instant, or discard it. No JVM.

`waterline.engine.release.prestage` computes, while a pre-armed run waits, each
tier's change at the due instant and writes its data and change-data files
into ``<tier>/wl-staged/<token>/`` without committing them (Delta readers see
only files a commit names). What it produced is a `StagedRelease`. At the
instant `commit_staged` takes the feed lease and checks, before the first
commit, that nothing the stage was computed from has moved: the held table
(only commits that kept every row since), every tier (other writers' commits
since must be ones each tier's commit may go after, `check_rebase`), and the
waterline the clock allows. Then it writes one Delta commit per tier
(`waterline.engine.delta.commit.write_commit`); nothing is computed after the
instant.

Each tier's commit is its own Delta commit: whatever happens to tier k (a
writer that changed its rows in the instant between the check and the commit,
a lost lease, a crash), the tiers committed before it keep their files, and
only the stages no commit names are discarded. The caller then plans the rest
again from the tables as they are, where the committed tiers already show
their new W_T (`StagedCommit.partial`).

Files of a stage that never committed (a discarded stage, a crash between
staging and commit) are invisible to readers; `orphan_stages` finds them for
`waterline gc`, which deletes them once they are older than `GC_AFTER_S`. A
stage older than `MAX_STAGE_AGE_US` is never committed, so gc cannot delete
the files of a commit still to come.
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
from waterline.engine.delta.commit import (
    Commit, FileActions, OwedCheckpoints, check_rebase, property_commit, tier_commit, write_commit,
)
from waterline.engine.delta.stages import GC_AFTER_S, MAX_STAGE_AGE_US, discard_stage, orphan_tokens, table_stage_folder
from waterline.engine.delta.table_log import APP_COMMIT, Snapshot, TableLog
from waterline.engine.tables import applied_spec, feed_tables
from waterline.engine.tables.lease import Lease, feed_lease
from waterline.spec import FeedSpec

log = logging.getLogger(__name__)


def stage_folder(spec: FeedSpec, tier: str, token: str) -> str:
    return table_stage_folder(spec.tier_path(tier), token)


@dataclass(frozen=True)
class StagedTier:
    """One tier's staged step: the tier snapshot it was computed on, the state and files its
    one commit will carry, and what the release reports once that commit is made."""

    base: Snapshot
    state: TierState  # the state after the release (token: the stage's)
    files: FileActions
    result: TierRelease

    @property
    def tier(self) -> str:
        return self.state.tier

    @property
    def commit(self) -> Commit:
        return tier_commit(self.files, self.state, app=APP_COMMIT)


@dataclass(frozen=True)
class StagedRelease:
    """A release computed for ``w_us`` from the held table at snapshot ``held`` (and each moving
    tier at its step's ``base``); ``steps`` are the tiers that move, ``settled`` those that do not."""

    feed: str
    token: str
    w_us: int
    seq: int
    held: Snapshot
    staged_at_us: int
    steps: tuple[StagedTier, ...]
    settled: tuple[TierRelease, ...] = ()
    spec_version: int | None = None  # the applied spec version its commits name

    @property
    def files(self) -> int:
        return sum(len(s.files.adds) + len(s.files.cdcs) for s in self.steps)


def still_valid(spec: FeedSpec, staged: StagedRelease, now_us: int) -> str | None:
    """Why the stage no longer applies at ``now_us`` (read from the logs), or None. Checks the
    held table, the applied spec version and the clock; every tier's check is `tier_conflicts`."""
    if now_us - staged.staged_at_us > MAX_STAGE_AGE_US:
        return "stage too old"
    held = TableLog.open(spec.held_path)
    version = applied_spec.in_force(spec, held)  # a spec applied since the stage: computed under another policy
    if version != staged.spec_version:
        return f"spec version {staged.spec_version} -> {version} applied since the stage"
    if held.version != staged.held.version:
        try:  # only commits that kept every held row (a user's OPTIMIZE) may lie between
            check_rebase(staged.held, property_commit(feed_tables.held_state(held, spec.feed)), latest=held.version)
        except SkippedCommit as exc:
            return f"held table moved (version {staged.held.version} -> {held.version}): {exc}"
    if target_waterline(spec, feed_tables.held_state(held, spec.feed), now_us, staged.w_us) != staged.w_us:
        return "the waterline the clock allows is below the staged one"
    return None


def tier_conflicts(spec: FeedSpec, staged: StagedRelease) -> str | None:
    """Why a tier's staged commit may not be written after what other writers committed to it
    since it was staged, or None: every tier checked before the first commit is made."""
    for step in staged.steps:
        latest = TableLog.open(spec.tier_path(step.tier)).version
        if latest is not None and latest != step.base.version:
            try:
                check_rebase(step.base, step.commit, latest=latest)
            except SkippedCommit as exc:
                return f"tier {step.tier}: {exc}"
    return None


@dataclass(frozen=True)
class StagedCommit:
    """What `commit_staged` did: ``result`` when every tier committed; otherwise ``partial``
    (the tiers that did commit, or None) and why the rest did not (``reason``)."""

    result: ReleaseResult | None
    partial: ReleaseResult | None = None
    reason: str | None = None

    @property
    def committed(self) -> tuple[str, ...]:
        done = self.result or self.partial
        return () if done is None else tuple(t for t, r in done.tiers.items() if not r.held)


def commit_staged(spec: FeedSpec, staged: StagedRelease, *, clock: Clock, lease: Lease,
                  now_us: int | None = None) -> StagedCommit:
    """Under the feed lease: one commit per moving tier. Nothing is committed when the stage no
    longer applies (any tier included); a tier whose commit meets a conflict stops the run
    there, and the tiers committed before it stay (``partial``). The stages of tiers not
    committed are the caller's to discard (`discard`, which spares committed ones).
    ``now_us``: the clock reading the caller made under this lease (else the clock is read).

    Raises what a commit raises that is not a lost race (a lost lease, `OutcomeUnknown`)."""
    reason = still_valid(spec, staged, clock.now_us() if now_us is None else now_us) or tier_conflicts(spec, staged)
    if reason is not None:
        log.info("feed %s: staged release %s not committed: %s", spec.feed, staged.token, reason)
        return StagedCommit(None, reason=reason)
    faults.boundary(faults.STAGED_BEFORE_COMMIT)
    results = {r.tier: r for r in staged.settled}
    committed: list[tuple[StagedTier, int]] = []
    owed = OwedCheckpoints()  # the tiers' checkpoints come after the last tier's commit
    for i, step in enumerate(staged.steps):
        faults.boundary(faults.RELEASE_BEFORE_MERGE if i == 0 else faults.RELEASE_BETWEEN_TIERS)
        lease.check()  # the last moment a lost lease can stop the commit
        try:
            version = write_commit(step.base, step.commit, checkpoints=owed)
        except SkippedCommit as exc:
            log.info("feed %s: staged release %s: tier %s not committed: %s", spec.feed, staged.token, step.tier, exc)
            owed.write()
            done = {s.tier: s.result for s, _ in committed}
            partial = _result(spec, staged, done) if done else None
            return StagedCommit(None, partial=partial, reason=f"tier {step.tier}: {exc}")
        committed.append((step, version))
        results[step.tier] = step.result
    owed.write()
    faults.boundary(faults.RELEASE_AFTER_TIERS)
    return StagedCommit(_result(spec, staged, results))


def _result(spec: FeedSpec, staged: StagedRelease, results: dict[str, TierRelease]) -> ReleaseResult:
    ordered = {t: results[t] for t in spec.tiers if t in results}
    w = max([staged.w_us] + [r.w_us for r in ordered.values() if not r.held and r.w_us is not None])
    return ReleaseResult(feed=spec.feed, requested_us=staged.w_us, w_us=w, seq=staged.seq, tiers=ordered)


def release_staged(spec: FeedSpec, staged: StagedRelease, *, clock: Clock) -> StagedCommit:
    """Take the feed lease and `commit_staged`; the stages of tiers that did not commit are
    discarded, and no stage a commit names ever is."""
    outcome = StagedCommit(None, reason="not committed")
    try:
        with feed_lease(spec.feed_dir, feed=spec.feed) as lease:
            outcome = commit_staged(spec, staged, clock=clock, lease=lease)
    finally:
        if outcome.result is None:
            discard(spec, staged, keep=outcome.committed)
    return outcome


def discard(spec: FeedSpec, staged: StagedRelease, *, keep: tuple[str, ...] = ()) -> None:
    """Delete the stage's files of every tier but ``keep`` (tiers whose commit names them), and
    only those no retained commit of the tier names: a commit whose answer was lost may have
    landed. Best effort: `waterline gc` deletes what this leaves."""
    for step in staged.steps:
        if step.tier in keep:
            continue
        path = spec.tier_path(step.tier)
        try:
            named = feed_tables.names_token(TableLog.open(path), staged.token, after=step.base.version)
        except Exception as exc:  # noqa: BLE001  (an unreadable log: keep the files, gc decides by token)
            log.warning("feed %s: tier %s: stage %s kept, its log is unreadable now: %s",
                        spec.feed, step.tier, staged.token, exc)
            continue
        if named:
            log.warning("feed %s: tier %s committed stage %s after all: its files are kept",
                        spec.feed, step.tier, staged.token)
            continue
        discard_stage(path, staged.token)


def orphan_stages(spec: FeedSpec, *, now_s: float, older_than_s: float = GC_AFTER_S) -> dict[str, list[str]]:
    """Per tier, the stage folders safe to delete (`orphan_tokens`)."""
    out = {tier: orphan_tokens(spec.tier_path(tier), now_s=now_s, older_than_s=older_than_s) for tier in spec.tiers}
    return {t: tokens for t, tokens in out.items() if tokens}
