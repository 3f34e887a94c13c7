"""The release proof's oracle: when each change a release made became due (`due_since`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.semantics.examples import property_settings
from tests.semantics.strategies import HI, IDENTITIES, LO, TIERS, histories, release_points
from waterline.semantics import NEG_INF, POS_INF, Version, due_since, release_changes, row_state, tier_state

MIN = 60_000_000  # one minute in µs
E = 1_000 * MIN  # an event time

tiers = st.sampled_from(TIERS)
read_points = st.one_of(st.none(), st.integers(0, 7))


def _v(seq: int, vis: tuple | None, tier: str = "t") -> Version:
    """A version of identity "k": ``vis=None`` is a removal."""
    return Version("k", seq, None, {}) if vis is None else Version("k", seq, {"seq": seq}, {tier: vis})


def test_a_delayed_row_is_due_when_its_delay_has_passed():
    row = [_v(1, ((E + 15 * MIN, POS_INF),))]
    assert due_since(row, "t", E + 40 * MIN) == E + 15 * MIN


def test_a_row_shown_in_every_tier_at_once_was_always_due():
    assert due_since([_v(1, ((NEG_INF, POS_INF),))], "t", E) == NEG_INF


def test_an_expired_row_was_due_to_go_at_its_expiry():
    row = [_v(1, ((E, E + 60 * MIN),))]
    assert row_state(row, "t", E + 90 * MIN) is None
    assert due_since(row, "t", E + 90 * MIN) == E + 60 * MIN
    assert due_since(row, "t", E - MIN) == NEG_INF  # absent before it was ever shown: nothing was due


def test_a_removal_is_due_at_once_and_a_revision_under_embargo_when_its_embargo_ends():
    published, revised = _v(1, ((E, POS_INF),)), _v(2, ((E + 30 * MIN, POS_INF),))
    # before the revision's embargo ends the published value stays, due since it was published
    assert row_state([published, revised], "t", E + 10 * MIN) == published
    assert due_since([published, revised], "t", E + 10 * MIN) == E
    assert due_since([published, revised], "t", E + 45 * MIN) == E + 30 * MIN
    assert due_since([published, _v(2, None)], "t", E + 10 * MIN) == NEG_INF


def test_a_release_committed_before_its_changes_were_due_is_caught():
    """A release at W = E + 20 min committed at E + 5 min (its clock set ahead): the row of
    a 15-minute delay is early by 10 minutes; the same release committed on time is not."""
    row = [_v(1, ((E + 15 * MIN, POS_INF),))]
    inserted, _, _ = release_changes({}, tier_state(row, "t", E + 20 * MIN))
    assert inserted == {"k"}
    due = due_since(row, "t", E + 20 * MIN)
    assert (E + 5 * MIN) - due == -10 * MIN  # the margin, negative: a breach
    assert (E + 20 * MIN) - due >= 0


def _per_identity(versions):
    """Each identity's versions: its history, what ``row_state`` and ``due_since`` take."""
    return [[v for v in versions if v.identity == identity] for identity in IDENTITIES]


@property_settings()
@given(histories(), tiers, release_points, read_points)
def test_the_state_holds_from_its_due_instant_to_w_and_not_just_before(versions, tier, w, s):
    for history in _per_identity(versions):
        final = row_state(history, tier, w, s)
        due = due_since(history, tier, w, s)
        assert due <= w
        start = max(due, LO - 5)
        assert all(row_state(history, tier, x, s) == final for x in range(start, w + 1))
        if due > NEG_INF:
            assert row_state(history, tier, due - 1, s) != final  # the earliest such instant
        else:
            assert all(row_state(history, tier, x, s) == final for x in range(LO - 5, min(w, HI + 5) + 1))


@property_settings()
@given(histories(), tiers, release_points, read_points)
def test_a_shown_row_is_due_at_the_start_of_its_visibility_interval(versions, tier, w, s):
    for history in _per_identity(versions):
        shown = row_state(history, tier, w, s)
        if shown is not None:
            [start] = [a for a, b in shown.vis_for(tier) if a <= w < b]
            assert due_since(history, tier, w, s) == start


@property_settings()
@given(histories(), tiers, release_points, release_points, st.integers(0, 7), st.integers(0, 7), st.integers(0, 5))
def test_a_release_committed_no_earlier_than_its_waterline_releases_nothing_early(versions, tier, wa, wb, sa, sb,
                                                                                  late):
    """Every change of a release from (w1, s1) to (w2, s2), committed ``late`` after W_T = w2,
    was due by then: a release that keeps W_T <= its trusted clock cannot breach."""
    (w1, w2), (s1, s2) = sorted((wa, wb)), sorted((sa, sb))
    before, after = tier_state(versions, tier, w1, s1), tier_state(versions, tier, w2, s2)
    for changed in set().union(*release_changes(before, after)):
        assert due_since([v for v in versions if v.identity == changed], tier, w2, s2) <= w2 + late
