"""The reference model of waterline's release semantics: the oracle.

Pure Python, no Spark, no Dagster. Every engine test compares the tier tables
against these functions, so they are written to be obviously correct rather
than fast. All instants are microseconds since the Unix epoch (UTC); intervals
are half-open ``[start, end)``.

How the functions map to DESIGN.md, "Semantics":

* Rule 1, **visibility** ``vis(v)``: :func:`branch_interval` turns one compiled
  policy branch (guard + lower bounds + upper bounds, already evaluated on the
  version's row) into at most one interval; :func:`visibility` takes the
  union over the branches as sorted, disjoint, merged intervals.
  :func:`visible_at` asks whether a waterline ``w`` is in ``vis(v)``.
* Rule 2, **takeover** ``tau(v)``: :func:`takeover` is the earliest instant of
  ``vis(v)``, or :data:`NEG_INF` for an empty ``vis`` or a removal.
* Rule 3, **tier state** after a release to ``w`` reading versions up to
  sequence ``s``: :func:`governing` picks, per row identity, the newest
  version (greatest ``seq <= s``) with ``tau <= w``; :func:`tier_state` keeps
  the identities whose governing version is visible at ``w``.

:func:`advance_state` is the incremental form the engine implements (look
only at rows touched by new versions, takeovers or visibility boundaries
between two releases); the property tests prove it equals :func:`tier_state`.
:func:`release_changes` diffs two states into inserted / updated / removed.

The release proof (``waterline audit``) asks when each change a release made
became due: :func:`row_state` is one identity's state at ``w`` (the version
shown, or absent) and :func:`due_since` the earliest waterline from which that
state holds for every waterline up to ``w``. A release committed at wall time
``t`` released a change early (a breach) iff ``t < due_since``; a release whose
W_T never passed its trusted clock has none, since ``due_since <= w`` always.

Stream ingest (a Kafka source): :func:`stream_batch` is the versions one micro-batch
appends: each key's last record in the batch (:func:`collapse`, by source partition
and offset) upserts or removes that key; nothing else changes, and a record equal to
the current version appends nothing. The versions then release by rules 1-3 as any.

Spec changes (a new tier, a changed policy, a retired tier, a new column, each taking
effect at an apply): :mod:`waterline.semantics.spec_history`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Iterable, Mapping, Sequence

from waterline.semantics.streams import StreamRecord, collapse, stream_batch, stream_current

NEG_INF: int = -(2**63)
"""Minus infinity in microseconds (Spark BIGINT minimum): e.g. a removal's takeover."""

POS_INF: int = 2**63 - 1
"""Plus infinity in microseconds (Spark BIGINT maximum): the end of an unbounded interval."""

Interval = tuple[int, int]
"""A half-open interval ``[start, end)`` of waterline instants, in microseconds."""

BoundValue = tuple["int | None", bool]
"""One evaluated policy bound: ``(value_us or None for SQL NULL, strict)``."""


# --- Rule 1: visibility --------------------------------------------------------


def representable(value: int | None) -> int | None:
    """A bound's value as Spark holds it: None (NULL, as Spark's try_ arithmetic gives) outside
    its TIMESTAMP range, which is exactly ``[NEG_INF, POS_INF]`` µs (year 294247 at the end)."""
    if value is None or not NEG_INF <= value <= POS_INF:
        return None
    return value


def branch_interval(
    guard: bool | None,
    lowers: Sequence[BoundValue],
    uppers: Sequence[BoundValue],
) -> Interval | None:
    """The interval of waterlines for which one policy branch is TRUE, or None if empty.

    ``guard`` is the branch's static guard evaluated with SQL three-valued logic:
    only TRUE keeps the branch (None = SQL NULL and False both drop it).
    A lower bound ``L <= W`` is ``(L, False)`` and starts at L; ``L < W`` is
    ``(L, True)`` and starts at L + 1µs. An upper bound ``W < U`` is ``(U, True)``
    and ends at U; ``W <= U`` is ``(U, False)`` and ends at U + 1µs. Several
    lowers -> the greatest start, several uppers -> the least end; no lowers ->
    NEG_INF, no uppers -> POS_INF. Any NULL bound makes the comparison NULL,
    hence not TRUE: the branch is empty. So is ``start >= end``.

    A bound outside Spark's TIMESTAMP range is NULL too (:func:`representable`; docs/semantics.md).
    """
    if guard is not True:
        return None
    starts: list[int] = []
    for value, strict in lowers:
        value = representable(value)
        if value is None:
            return None
        starts.append(value + 1 if strict else value)
    ends: list[int] = []
    for value, strict in uppers:
        value = representable(value)
        if value is None:
            return None
        ends.append(value if strict else value + 1)
    # Clamp so the sentinels stay representable as Spark BIGINTs.
    start = max(NEG_INF, max(starts, default=NEG_INF))
    end = min(POS_INF, min(ends, default=POS_INF))
    if start >= end:
        return None
    return (start, end)


def visibility(branches: Iterable[Interval | None]) -> tuple[Interval, ...]:
    """Union of the branches' intervals: sorted, disjoint, touching ones merged.

    ``None`` entries (empty branches) are ignored; the result is ``()`` when the
    version is invisible for every W.
    """
    merged: list[Interval] = []
    for start, end in sorted(b for b in branches if b is not None and b[0] < b[1]):
        if merged and start <= merged[-1][1]:
            # Overlapping or touching ([a, b) and [b, c)): one interval [a, c).
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)


def visible_at(vis: Sequence[Interval], w: int) -> bool:
    """True iff waterline ``w`` lies in one of the half-open intervals of ``vis``."""
    return any(start <= w < end for start, end in vis)


# --- Rule 2: takeover ----------------------------------------------------------


def takeover(vis: Sequence[Interval], removed: bool = False) -> int:
    """``tau``: the earliest instant of ``vis``; NEG_INF if ``vis`` is empty or for a removal.

    A version with NEG_INF takeover governs at once: that is how removals and
    recalls (no branch holds any more) take effect at the next release.
    """
    if removed or not vis:
        return NEG_INF
    return min(start for start, _ in vis)


# --- Rule 3: governing version and tier state ----------------------------------


@dataclass(frozen=True)
class Version:
    """One version of a row: its identity, ingest sequence, payload and visibility per tier.

    ``payload=None`` marks a removal. A tier missing from ``vis`` means an empty
    visibility for that tier (the version never shows there).
    """

    identity: Hashable
    seq: int
    payload: Mapping | None
    vis: Mapping[str, tuple[Interval, ...]] = field(default_factory=dict)

    @property
    def is_removal(self) -> bool:
        return self.payload is None

    def vis_for(self, tier: str) -> tuple[Interval, ...]:
        """This version's visibility in ``tier`` (empty for a removal)."""
        return () if self.is_removal else tuple(self.vis.get(tier, ()))

    def tau(self, tier: str) -> int:
        """This version's takeover in ``tier`` (rule 2)."""
        return takeover(self.vis_for(tier), removed=self.is_removal)

    def present_at(self, tier: str, w: int) -> bool:
        """Whether this version, if governing, shows its row in ``tier`` at ``w``."""
        return visible_at(self.vis_for(tier), w)


def governing(versions: Iterable[Version], tier: str, w: int, s: int | None = None) -> Version | None:
    """The governing version of ONE row identity: newest ``seq <= s`` with ``tau <= w``.

    ``s=None`` reads every version. Returns None when no version qualifies
    (the row has never taken over in this tier).
    """
    due = [v for v in versions if (s is None or v.seq <= s) and v.tau(tier) <= w]
    if not due:
        return None
    identities = {v.identity for v in due}
    if len(identities) > 1:
        raise ValueError(f"governing() takes the versions of one identity, got {sorted(map(repr, identities))}")
    newest = max(due, key=lambda v: v.seq)
    if sum(1 for v in due if v.seq == newest.seq) > 1:
        raise ValueError(f"identity {newest.identity!r} has two versions with seq {newest.seq}")
    return newest


def _by_identity(versions: Iterable[Version]) -> dict[Hashable, list[Version]]:
    grouped: dict[Hashable, list[Version]] = {}
    for v in versions:
        grouped.setdefault(v.identity, []).append(v)
    return grouped


def tier_state(versions: Iterable[Version], tier: str, w: int, s: int | None = None) -> dict[Hashable, Version]:
    """Tier ``tier`` after a release to ``w`` reading versions up to ``s``: present rows only.

    Maps each identity whose governing version is visible at ``w`` to that
    version (a removal is never visible, so removed rows are absent).
    """
    state: dict[Hashable, Version] = {}
    for identity, history in _by_identity(versions).items():
        gov = governing(history, tier, w, s)
        if gov is not None and gov.present_at(tier, w):
            state[identity] = gov
    return state


# --- The incremental form the engine implements -------------------------------


def _may_change(v: Version, tier: str, w1: int, w2: int, s1: int | None, s2: int | None) -> bool:
    """Can version ``v`` make its row differ between release (w1, s1) and (w2, s2)?

    Only three things can: it was ingested since (seq in (s1, s2]), it takes over
    in (w1, w2], or it starts/ends being visible in (w1, w2] (presence of a fixed
    version flips only when W crosses a start or an end of its vis).
    """
    if s1 is not None and (s2 is None or v.seq <= s2) and v.seq > s1:
        return True
    # tau is itself the start of a vis interval, so the boundary test below
    # covers it; spelled out because "takes over" is how the engine finds rows.
    if w1 < v.tau(tier) <= w2:
        return True
    return any(w1 < b <= w2 for interval in v.vis_for(tier) for b in interval)


def advance_state(
    versions: Iterable[Version],
    tier: str,
    state_at_w1: Mapping[Hashable, Version],
    w1: int,
    w2: int,
    s1: int | None,
    s2: int | None,
) -> dict[Hashable, Version]:
    """The state at (w2, s2) computed from the state at (w1, s1) and the changes in between.

    Models the engine's release: only identities with a version that may
    change them (see :func:`_may_change`) are recomputed; every other row keeps
    its entry from ``state_at_w1``. Requires ``w2 >= w1`` and ``s2 >= s1``
    (waterlines and ingest sequences never go back); ``s=None`` means "all".
    Equal to ``tier_state(versions, tier, w2, s2)`` (a property test).
    """
    if w2 < w1:
        raise ValueError(f"waterline went back: {w2} < {w1}")
    if s1 is not None and s2 is not None and s2 < s1:
        raise ValueError(f"ingest sequence went back: {s2} < {s1}")
    if s1 is None and s2 is not None:
        raise ValueError("cannot read fewer versions (s2) after reading all of them (s1=None)")
    history = _by_identity(versions)
    touched = {
        identity
        for identity, vs in history.items()
        if any(_may_change(v, tier, w1, w2, s1, s2) for v in vs if s2 is None or v.seq <= s2)
    }
    state = {identity: v for identity, v in state_at_w1.items() if identity not in touched}
    for identity in touched:
        gov = governing(history[identity], tier, w2, s2)
        if gov is not None and gov.present_at(tier, w2):
            state[identity] = gov
    return state


def release_changes(
    before: Mapping[Hashable, Version], after: Mapping[Hashable, Version]
) -> tuple[set[Hashable], set[Hashable], set[Hashable]]:
    """What a release did to a tier: (inserted, updated, removed) identities.

    Updated means the row stayed present but its governing version changed.
    """
    inserted = set(after) - set(before)
    removed = set(before) - set(after)
    updated = {i for i in set(before) & set(after) if before[i] != after[i]}
    return inserted, updated, removed



# --- The release proof: when a release's changes became due -------------------


def row_state(history: Iterable[Version], tier: str, w: int, s: int | None = None) -> Version | None:
    """ONE identity's state in ``tier`` at ``w`` reading versions up to ``s``: the version its
    row shows, or None when the row is absent (never due, removed, recalled or expired)."""
    gov = governing(history, tier, w, s)
    return gov if gov is not None and gov.present_at(tier, w) else None


def due_since(history: Iterable[Version], tier: str, w: int, s: int | None = None) -> int:
    """The instant from which ONE identity's state at ``w`` was due: the earliest waterline
    ``d <= w`` such that the row's state (the version shown, or absent) is the same for every
    waterline in ``[d, w]``; NEG_INF when it is the same for every waterline up to ``w``.

    For a row shown at ``w`` this is the start of the interval of its version's visibility
    that holds ``w`` (the embargo's end, the delay passed, ...); for a row absent at ``w`` it
    is when it had to go (its expiry, or at once for a removal). A release that committed
    this state at a wall time before ``d`` released it early.
    """
    versions = [v for v in history if s is None or v.seq <= s]
    final = row_state(versions, tier, w)
    # The state only changes where W crosses a start or an end of some version's visibility
    # (takeovers are starts), so it is constant between consecutive boundaries: walk back
    # from w, one segment at a time, until the segment before differs.
    boundaries = {b for v in versions for interval in v.vis_for(tier) for b in interval}
    for b in sorted((b for b in boundaries if NEG_INF < b <= w), reverse=True):
        if row_state(versions, tier, b - 1) != final:
            return b
    return NEG_INF


__all__ = [
    "NEG_INF",
    "POS_INF",
    "Interval",
    "BoundValue",
    "Version",
    "representable",
    "branch_interval",
    "visibility",
    "visible_at",
    "takeover",
    "governing",
    "tier_state",
    "advance_state",
    "release_changes",
    "row_state",
    "due_since",
    "StreamRecord",
    "collapse",
    "stream_batch",
    "stream_current",
]
