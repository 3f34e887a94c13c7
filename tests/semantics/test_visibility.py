"""Property tests of rules 1 and 2: branches -> visibility -> takeover."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.semantics.examples import property_settings
from tests.semantics.strategies import branch, release_points
from waterline.semantics import NEG_INF, takeover, visibility, visible_at

branch_lists = st.lists(branch(), max_size=4)


@property_settings()
@given(branch_lists)
def test_visibility_is_sorted_disjoint_and_merged(branches):
    vis = visibility(branches)
    for start, end in vis:
        assert start < end
    for (_, end), (next_start, _) in zip(vis, vis[1:]):
        assert end < next_start  # touching intervals would have been merged


@property_settings()
@given(branch_lists, release_points)
def test_visible_iff_some_branch_holds(branches, w):
    holds = any(b is not None and b[0] <= w < b[1] for b in branches)
    assert visible_at(visibility(branches), w) == holds


@property_settings()
@given(branch_lists, release_points)
def test_takeover_is_the_first_visible_instant(branches, w):
    vis = visibility(branches)
    tau = takeover(vis)
    if not vis:
        assert tau == NEG_INF
    else:
        assert visible_at(vis, tau)
        assert not (w < tau and visible_at(vis, w))
    assert takeover(vis, removed=True) == NEG_INF
