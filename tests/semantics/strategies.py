"""Hypothesis strategies for random version histories.

Instants come from a small range so that takeovers, boundaries and releases
collide often; the sentinels appear as unbounded ends.
"""

from __future__ import annotations

from hypothesis import strategies as st

from waterline.semantics import NEG_INF, POS_INF, Version, branch_interval

TIERS = ("t1", "t2")
IDENTITIES = ("a", "b", "c", "d")
LO, HI = 0, 30

instants = st.integers(LO, HI)
release_points = st.integers(LO - 3, HI + 3)


@st.composite
def branch(draw):
    """One evaluated policy branch -> interval or None, through the oracle's own rule."""
    guard = draw(st.sampled_from([True, True, True, False, None]))
    bound = st.tuples(st.one_of(instants, instants, st.none()), st.booleans())
    lowers = draw(st.lists(bound, max_size=2))
    uppers = draw(st.lists(bound, max_size=2))
    return branch_interval(guard, lowers, uppers)


@st.composite
def vis_strategy(draw):
    """A visibility: 0-3 sorted disjoint intervals, sometimes unbounded at either end.

    Drawn as sorted boundary points (cheap) rather than through branches; the
    branch -> vis rules are property-tested separately in test_visibility.
    """
    points = sorted(draw(st.lists(instants, unique=True, max_size=6)))
    if draw(st.integers(0, 3)) == 0:
        points = [NEG_INF] + points
    if len(points) % 2:
        points.append(POS_INF)
    return tuple(zip(points[::2], points[1::2]))


@st.composite
def vis_after(draw, w: int):
    """A non-empty visibility whose takeover is strictly after ``w``."""
    start = draw(st.integers(w + 1, w + 10))
    end = draw(st.one_of(st.just(POS_INF), st.integers(start + 1, start + 10)))
    return ((start, end),)


@st.composite
def version_for(draw, identity, seq: int) -> Version:
    if draw(st.integers(0, 4)) == 0:
        return Version(identity, seq, None, {})
    payload = {"seq": seq, "x": draw(st.integers(0, 3))}
    return Version(identity, seq, payload, {t: draw(vis_strategy()) for t in TIERS})


@st.composite
def histories(draw, max_ingests: int = 6) -> list[Version]:
    """Ingests 1..n; each appends versions for a subset of identities (one per identity)."""
    versions: list[Version] = []
    for seq in range(1, draw(st.integers(0, max_ingests)) + 1):
        for identity in draw(st.lists(st.sampled_from(IDENTITIES), unique=True, max_size=3)):
            versions.append(draw(version_for(identity, seq)))
    return versions


def max_seq(versions) -> int:
    return max((v.seq for v in versions), default=0)

