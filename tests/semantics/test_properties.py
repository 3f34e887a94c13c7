"""Property tests of the oracle on random version histories (DESIGN.md, "Semantics")."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from tests.semantics.examples import property_settings
from tests.semantics.strategies import TIERS, histories, max_seq, release_points, vis_after
from waterline.semantics import Version, advance_state, release_changes, tier_state, visible_at

tiers = st.sampled_from(TIERS)
read_points = st.one_of(st.none(), st.integers(0, 7))


@property_settings()
@given(histories(), tiers, release_points, read_points, st.randoms(use_true_random=False))
def test_release_is_a_pure_function(versions, tier, w, s, rnd: random.Random):
    first = tier_state(versions, tier, w, s)
    assert tier_state(versions, tier, w, s) == first
    shuffled = list(versions)
    rnd.shuffle(shuffled)
    assert tier_state(shuffled, tier, w, s) == first  # the order rows are stored in is irrelevant
    # Re-running the release changes nothing.
    assert release_changes(first, advance_state(versions, tier, first, w, w, s, s)) == (set(), set(), set())


@property_settings()
@given(histories(), tiers, release_points, release_points, st.integers(0, 7), st.integers(0, 7))
def test_incremental_release_equals_fresh_release(versions, tier, wa, wb, sa, sb):
    w1, w2 = sorted((wa, wb))
    s1, s2 = sorted((sa, sb))
    at_w1 = tier_state(versions, tier, w1, s1)
    assert advance_state(versions, tier, at_w1, w1, w2, s1, s2) == tier_state(versions, tier, w2, s2)


@property_settings()
@given(
    histories(),
    tiers,
    st.lists(st.tuples(release_points, st.integers(0, 7)), min_size=1, max_size=5),
)
def test_state_never_depends_on_earlier_releases(versions, tier, releases):
    """Any chain of monotonic releases ends where a single release to the last point does."""
    ws = sorted(w for w, _ in releases)
    ss = sorted(s for _, s in releases)
    w_prev, s_prev = ws[0] - 1, 0  # before the first release: nothing ingested
    state = tier_state(versions, tier, w_prev, s_prev)
    for w, s in zip(ws, ss):
        state = advance_state(versions, tier, state, w_prev, w, s_prev, s)
        w_prev, s_prev = w, s
    assert state == tier_state(versions, tier, ws[-1], ss[-1])


@property_settings()
@given(histories(), tiers, release_points, st.data())
def test_revision_under_embargo_never_withdraws_early(versions, tier, w, data):
    s = max_seq(versions)
    before = tier_state(versions, tier, w, s)
    identity = data.draw(st.sampled_from(sorted({v.identity for v in versions} | {"new"})))
    revision = Version(identity, s + 1, {"revised": True}, {tier: data.draw(vis_after(w))})
    after = tier_state(versions + [revision], tier, w, s + 1)
    assert after == before
    if identity in before:
        assert after[identity].payload == before[identity].payload


@property_settings()
@given(histories(), tiers, release_points, st.integers(0, 10), st.booleans(), st.data())
def test_removals_and_recalls_take_effect_at_next_release(versions, tier, w, step, is_removal, data):
    s = max_seq(versions)
    identity = data.draw(st.sampled_from(sorted({v.identity for v in versions} | {"new"})))
    # A recall: same payload shape, but no branch holds any more (empty vis everywhere).
    change = Version(identity, s + 1, None if is_removal else {"recalled": True}, {})
    next_release = tier_state(versions + [change], tier, w + step, s + 1)
    assert identity not in next_release


@property_settings()
@given(histories(), tiers, release_points, read_points)
def test_nothing_is_visible_before_its_takeover(versions, tier, w, s):
    for identity, version in tier_state(versions, tier, w, s).items():
        assert version.identity == identity
        assert not version.is_removal
        assert s is None or version.seq <= s
        assert version.tau(tier) <= w
        assert visible_at(version.vis_for(tier), w)  # embargo safety: W is in vis(governing)
        # No newer, already-due version exists: the row shows its governing version.
        newer_due = [
            v for v in versions
            if v.identity == identity and v.seq > version.seq and (s is None or v.seq <= s) and v.tau(tier) <= w
        ]
        assert newer_due == []
