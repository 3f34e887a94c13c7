"""The reference model of a feed whose spec changes: the oracle for `waterline apply`.

docs/semantics.md, "When the spec changes", in code. A :class:`SpecHistory` is a feed's
life as a sequence of events: ingests (versions, as in rules 1-3), releases (a waterline
reached at a wall-clock instant) and applies (a new :class:`SpecVersion` taking effect at
an instant). Each release writes one :class:`Commit` per live tier, naming the spec
version it was released under; :func:`audit` judges each commit by that version.

A tier's policy in force is an *era*: the policy, and the rows the tier showed when the
policy took effect, **kept** (each from the tier's W_T at the apply until the end of the
first interval of its new visibility that ends after that W_T). A version's effective
visibility in the era is its visibility under the policy united with its kept interval;
rules 1-3 then apply unchanged (:func:`waterline.semantics.tier_state`). So a changed
policy reschedules every pending version, never withdraws a published row before the
new policy's own rules remove it, and shows nothing before the apply's instant (every
release before it is computed in the previous era).

A new tier's first commit, at the apply, is what its policy shows at the feed's W (the
greatest W_T any tier reached): the tier a fresh feed would have there. :meth:`SpecHistory.gc`
drops the versions the engine's gc deletes from held (superseded in every live tier, and
removals every tier applied); a tier that starts or is rescheduled later never shows a
dropped version: where one would govern, the identity shows nothing until a newer version
governs (never earlier than a history without gc, never a row it would not show). A retired tier
is released no more; its last commit stays (its table is kept) and its name cannot be
given to a new tier. A new column reads None in every version written before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Hashable, Mapping

from waterline.semantics import Interval, Version, due_since, release_changes, takeover, tier_state, visibility

WIDENINGS: frozenset[tuple[str, str]] = frozenset({
    ("tinyint", "smallint"), ("tinyint", "int"), ("tinyint", "bigint"), ("smallint", "int"),
    ("smallint", "bigint"), ("int", "bigint"), ("float", "double"), ("date", "timestamp_ntz"),
})
"""Column type changes (old, new) every reader takes (Delta's type widening): allowed by an apply."""


@dataclass(frozen=True)
class Policy:
    """A tier's release policy as the model sees it: ``text`` (two policies are the same iff
    their texts are) and ``vis``, its visibility (rule 1) evaluated on a row's payload."""

    text: str
    vis: Callable[[Mapping], tuple[Interval, ...]] = field(compare=False, repr=False)


@dataclass(frozen=True)
class SpecVersion:
    """One version of the feed's spec that took effect: number 1, 2, ... at ``applied_us``."""

    number: int
    applied_us: int
    tiers: Mapping[str, Policy]
    columns: Mapping[str, str]


@dataclass(frozen=True)
class Commit:
    """One release of one tier: W_T ``w``, committed at wall time ``at_us`` reading versions up
    to ``s``, under spec version ``spec``; ``state`` is the tier after it (rule 3's map)."""

    tier: str
    spec: int
    w: int
    at_us: int
    s: int
    state: Mapping[Hashable, Version]


@dataclass(frozen=True)
class Breach:
    """A change a commit made before it was due under the spec version it was released under."""

    tier: str
    commit: int
    identity: Hashable
    due_us: int
    at_us: int


@dataclass
class _Era:
    spec: int
    policy: Policy
    kept: dict[tuple[Hashable, int], Interval]


def column_changes(old: Mapping[str, str], new: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(added, widened) column names from ``old`` to ``new``; a removed column or a type change
    that is no widening raises ValueError naming the column."""
    for name, kind in old.items():
        if name not in new:
            raise ValueError(f"column {name} removed: older versions and published rows hold it; keep it")
        if new[name] != kind and (kind, new[name]) not in WIDENINGS:
            raise ValueError(f"column {name}: {kind} -> {new[name]} is no widening; add a new column instead")
    return [c for c in new if c not in old], [c for c in old if new[c] != old[c]]


def kept_interval(new_vis: tuple[Interval, ...], w_at_apply: int) -> Interval | None:
    """How long a row shown at ``w_at_apply`` stays under a new policy: until the end of the
    first interval of its new visibility that ends after it (None: the new policy never shows
    it again, so the next release removes it)."""
    ends = [end for _, end in new_vis if end > w_at_apply]
    return (w_at_apply, min(ends)) if ends else None


class SpecHistory:
    """A feed's versions, spec versions and tier commits, event by event (see the module)."""

    def __init__(self, tiers: Mapping[str, Policy], columns: Mapping[str, str], at_us: int) -> None:
        self.specs = [SpecVersion(1, at_us, dict(tiers), dict(columns))]
        self.rows: list[tuple[Hashable, int, Mapping | None]] = []
        self.seq = 0
        self.commits: list[Commit] = []
        self.now_us = at_us
        self._eras = {t: _Era(1, p, {}) for t, p in tiers.items()}
        self._retired: set[str] = set()
        self.dropped: set[tuple[Hashable, int]] = set()

    @property
    def spec(self) -> SpecVersion:
        """The spec version in force."""
        return self.specs[-1]

    def ingest(self, changes: Mapping[Hashable, Mapping | None]) -> int:
        """Append one version per identity whose payload (None: a removal) differs from its
        current one, all with the next seq; the number of versions appended."""
        current: dict[Hashable, Mapping | None] = {}
        for identity, _, payload in self.rows:
            current[identity] = payload
        new = [(i, p) for i, p in changes.items() if current.get(i) != p]
        if new:
            self.seq += 1
            self.rows.extend((i, self.seq, None if p is None else dict(p)) for i, p in new)
        return len(new)

    def versions(self, tier: str) -> list[Version]:
        """Every version with its effective visibility in ``tier``'s era in force."""
        return self._versions(tier, self._eras[tier])

    def _versions(self, tier: str, era: _Era, *, dropped: bool = False) -> list[Version]:
        out = []
        for identity, seq, payload in self.rows:
            if not dropped and (identity, seq) in self.dropped:
                continue
            vis: tuple[Interval, ...] = ()
            if payload is not None:
                vis = visibility([*era.policy.vis(payload), era.kept.get((identity, seq))])
            out.append(Version(identity, seq, payload, {tier: vis}))
        return out

    def gc(self) -> int:
        """Drop what the engine's gc deletes from held (`waterline.engine.upkeep.gc`): each
        version older than the version governing its identity in every live tier, and every
        version of an identity whose newest version is a removal all live tiers applied;
        nothing while a live tier was never released. The number of versions dropped."""
        lasts = [(t, self.last(t)) for t in self._eras]
        if not lasts or any(c is None for _, c in lasts):
            return 0
        applied = min(c.s for _, c in lasts)
        kept = [(i, s, p) for i, s, p in self.rows if (i, s) not in self.dropped]
        governing: dict[Hashable, int] = {}
        for tier, commit in lasts:
            due: dict[Hashable, int] = {}
            for v in self._versions(tier, self._eras[tier]):
                if takeover(v.vis[tier], removed=v.payload is None) <= commit.w:
                    due[v.identity] = max(due.get(v.identity, -1), v.seq)
            for i, _, _ in kept:
                governing[i] = min(governing.get(i, due.get(i, -1)), due.get(i, -1))
        newest: dict[Hashable, tuple[int, Mapping | None]] = {}
        for i, s, p in kept:
            newest[i] = max(newest.get(i, (-1, None)), (s, p), key=lambda x: x[0])
        dead = {(i, s) for i, s, _ in kept
                if s < governing[i] or (newest[i][1] is None and newest[i][0] <= applied)}
        self.dropped |= dead
        return len(dead)

    def last(self, tier: str) -> Commit | None:
        """The tier's last commit (a retired tier's stays: its table is kept)."""
        return next((c for c in reversed(self.commits) if c.tier == tier), None)

    def feed_w(self) -> int | None:
        """The feed's W: the greatest W_T any tier reached (None before the first release); a
        retired tier's counts, since W never goes back."""
        return max((c.w for c in self.commits), default=None)

    def release(self, w: int, at_us: int) -> list[Commit]:
        """Release every live tier to ``max(W_T, w)`` at wall time ``at_us`` (W never passes it)."""
        self._tick(at_us)
        if w > at_us:
            raise ValueError(f"W {w} ahead of the trusted clock {at_us}")
        made = []
        for tier, era in self._eras.items():
            prev = self.last(tier)
            made.append(self._commit(tier, era, w if prev is None else max(prev.w, w), at_us))
        return made

    def _commit(self, tier: str, era: _Era, w: int, at_us: int) -> Commit:
        state = tier_state(self._versions(tier, era), tier, w, self.seq)
        commit = Commit(tier, self.spec.number, w, at_us, self.seq, state)
        self.commits.append(commit)
        return commit

    def apply(self, tiers: Mapping[str, Policy], columns: Mapping[str, str], at_us: int) -> SpecVersion:
        """Make a changed spec take effect at ``at_us`` (see the module); refusals raise ValueError."""
        self._tick(at_us)
        column_changes(self.spec.columns, columns)
        back = sorted(set(tiers) & self._retired)
        if back:
            raise ValueError(f"tier {back[0]} was retired: its table is kept until dropped; name the new tier anew")
        version = SpecVersion(self.spec.number + 1, at_us, dict(tiers), dict(columns))
        self.specs.append(version)
        w = self.feed_w()
        self._retired |= set(self._eras) - set(tiers)
        eras = {}
        for tier, policy in tiers.items():
            era, prev = self._eras.get(tier), self.last(tier)
            if era is not None and era.policy == policy:
                eras[tier] = _Era(version.number, policy, era.kept)
            else:  # a changed policy keeps what the tier shows; a new tier starts from nothing
                eras[tier] = _Era(version.number, policy, _kept(policy, prev if era is not None else None))
        self._eras = eras
        for tier in tiers:
            if self.last(tier) is None and w is not None:  # a new tier starts at the feed's W
                self._commit(tier, eras[tier], w, at_us)
        return version

    def contents(self, tier: str) -> dict[Hashable, dict]:
        """What ``tier`` holds now, each row read with the columns in force (None where its
        version was written before the column existed); {} before its first release."""
        last = self.last(tier)
        if last is None:
            return {}
        names = self.spec.columns if tier in self._eras else self.specs[last.spec - 1].columns
        return {i: {c: (v.payload or {}).get(c) for c in names} for i, v in last.state.items()}

    def _tick(self, at_us: int) -> None:
        if at_us < self.now_us:
            raise ValueError(f"instant {at_us} before the previous event's {self.now_us}")
        self.now_us = at_us

    def era_versions(self, commit: Commit) -> list[Version]:
        """The versions up to ``commit.s`` with their visibility in the era it was released in."""
        era = self._era_of(commit)
        return [v for v in self._versions(commit.tier, era, dropped=True) if v.seq <= commit.s]

    def _era_of(self, commit: Commit) -> _Era:
        """Rebuild the era of ``commit`` from the commits: its policy, and the rows its tier
        showed at the apply that changed the policy (kept as in `apply`)."""
        policy = self.specs[commit.spec - 1].tiers[commit.tier]
        start = commit.spec
        while start > 1 and self.specs[start - 2].tiers.get(commit.tier) == policy:
            start -= 1
        before = [c for c in self.commits if c.tier == commit.tier and c.spec < start]
        return _Era(commit.spec, policy, _kept(policy, before[-1] if before else None))


def _kept(policy: Policy, shown: Commit | None) -> dict[tuple[Hashable, int], Interval]:
    """The kept interval of each row ``shown`` (the tier's last commit before ``policy`` took
    effect) holds, by (identity, seq)."""
    if shown is None:
        return {}
    return {(i, v.seq): k for i, v in shown.state.items()
            if (k := kept_interval(policy.vis(v.payload), shown.w)) is not None}


def audit(history: SpecHistory, commits: list[Commit] | None = None) -> list[Breach]:
    """Every change a commit made before it was due, each commit judged by the spec version
    it was released under: a row inserted, updated or removed at W_T whose state there was
    due only after the commit's wall time (`waterline.semantics.due_since`)."""
    commits = history.commits if commits is None else commits
    breaches: list[Breach] = []
    previous: dict[str, Mapping[Hashable, Version]] = {}
    for n, commit in enumerate(commits):
        before = previous.get(commit.tier, {})
        # By seq: a version kept across an apply is the same row, whatever its visibility now.
        inserted, updated, removed = release_changes(_seqs(before), _seqs(commit.state))
        previous[commit.tier] = commit.state
        versions = history.era_versions(commit)
        for identity in sorted(inserted | updated | removed, key=repr):
            due = due_since([v for v in versions if v.identity == identity], commit.tier, commit.w)
            if commit.at_us < due:
                breaches.append(Breach(commit.tier, n, identity, due, commit.at_us))
    return breaches


def _seqs(state: Mapping[Hashable, Version]) -> dict[Hashable, int]:
    return {i: v.seq for i, v in state.items()}


__all__ = ["WIDENINGS", "Policy", "SpecVersion", "Commit", "Breach", "SpecHistory", "column_changes",
           "kept_interval", "audit"]
