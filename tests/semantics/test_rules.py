"""Example-based tests of the oracle: each DESIGN.md rule on hand-checked cases."""

from __future__ import annotations

import pytest

from waterline.semantics import (
    NEG_INF,
    POS_INF,
    Version,
    advance_state,
    branch_interval,
    governing,
    release_changes,
    takeover,
    tier_state,
    visibility,
    visible_at,
)

MIN = 60_000_000  # one minute in µs


def test_sentinels_are_spark_bigint_limits():
    assert NEG_INF == -(2**63) and POS_INF == 2**63 - 1


@pytest.mark.parametrize(
    "guard, lowers, uppers, expected",
    [
        (True, [], [], (NEG_INF, POS_INF)),  # "TRUE"
        (True, [(100, False)], [], (100, POS_INF)),  # L <= W
        (True, [(100, True)], [], (101, POS_INF)),  # L < W
        (True, [], [(200, True)], (NEG_INF, 200)),  # W < U
        (True, [], [(200, False)], (NEG_INF, 201)),  # W <= U
        (True, [(100, False), (150, True)], [(300, True), (250, False)], (151, 251)),  # greatest / least
        (None, [(100, False)], [], None),  # guard NULL is not TRUE
        (False, [(100, False)], [], None),
        (True, [(None, False)], [], None),  # NULL bound
        (True, [(100, False)], [(None, True)], None),
        (True, [(100, False)], [(100, True)], None),  # start >= end
        (True, [(100, False)], [(100, False)], (100, 101)),  # L <= W <= L: exactly one instant
        (True, [(100, True)], [(100, False)], None),
    ],
)
def test_branch_interval(guard, lowers, uppers, expected):
    assert branch_interval(guard, lowers, uppers) == expected


def test_visibility_merges_sorts_and_drops_empty():
    assert visibility([]) == ()
    assert visibility([None, None]) == ()
    assert visibility([(10, 20), None, (0, 5)]) == ((0, 5), (10, 20))
    assert visibility([(0, 10), (10, 20)]) == ((0, 20),)  # touching -> merged
    assert visibility([(0, 10), (5, 8), (9, 30), (40, 50)]) == ((0, 30), (40, 50))


def test_visible_at_is_half_open():
    vis = ((0, 10), (20, 30))
    assert [w for w in (-1, 0, 9, 10, 19, 20, 29, 30) if visible_at(vis, w)] == [0, 9, 20, 29]


def test_takeover():
    assert takeover(((5, 10), (20, 30))) == 5
    assert takeover(()) == NEG_INF
    assert takeover(((5, 10),), removed=True) == NEG_INF


def v(identity, seq, payload, **vis):
    return Version(identity, seq, payload, {t: tuple(i) for t, i in vis.items()})


def test_embargoed_revision_does_not_withdraw_published_value():
    # Published at 10 in tier "d"; a revision embargoed until 100.
    old = v("r", 1, {"p": 1}, d=[(10, POS_INF)])
    new = v("r", 2, {"p": 2}, d=[(100, POS_INF)])
    assert governing([old, new], "d", 50) is old
    assert tier_state([old, new], "d", 50)["r"].payload == {"p": 1}
    assert tier_state([old, new], "d", 100)["r"].payload == {"p": 2}


def test_removal_and_recall_take_effect_at_next_release():
    old = v("r", 1, {"p": 1}, d=[(10, POS_INF)])
    assert tier_state([old, v("r", 2, None)], "d", 50) == {}
    recall = v("r", 2, {"p": 1}, d=[])  # guard no longer holds
    assert tier_state([old, recall], "d", 50) == {}
    # ... but not when reading only what was ingested before the removal.
    assert tier_state([old, v("r", 2, None)], "d", 50, s=1) == {"r": old}


def test_expiry_and_nothing_before_takeover():
    row = v("r", 1, {"p": 1}, last=[(10, 20)])
    assert [w for w in (9, 10, 19, 20) if tier_state([row], "last", w)] == [10, 19]


def test_governing_version_outside_its_vis_hides_the_row():
    # The newest due version is in a gap of its vis: the row is absent, the
    # older version does not show through.
    old = v("r", 1, {"p": 1}, t=[(0, POS_INF)])
    new = v("r", 2, {"p": 2}, t=[(10, 20), (30, 40)])
    assert governing([old, new], "t", 25) is new
    assert tier_state([old, new], "t", 25) == {}


def test_governing_rejects_mixed_identities_and_duplicate_seq():
    with pytest.raises(ValueError):
        governing([v("a", 1, {}, t=[(0, 1)]), v("b", 2, {}, t=[(0, 1)])], "t", 5)
    with pytest.raises(ValueError):
        governing([v("a", 1, {}, t=[(0, 1)]), v("a", 1, {"x": 1}, t=[(0, 1)])], "t", 5)


def test_advance_state_and_release_changes():
    versions = [
        v("a", 1, {"p": 1}, t=[(0, POS_INF)]),
        v("b", 1, {"p": 1}, t=[(0, 15)]),
        v("a", 2, {"p": 2}, t=[(12, POS_INF)]),
        v("c", 2, {"p": 1}, t=[(5, POS_INF)]),
    ]
    at10 = tier_state(versions, "t", 10, 1)
    at20 = advance_state(versions, "t", at10, 10, 20, 1, 2)
    assert at20 == tier_state(versions, "t", 20, 2)
    assert release_changes(at10, at20) == ({"c"}, {"a"}, {"b"})
    with pytest.raises(ValueError):
        advance_state(versions, "t", at10, 10, 5, 1, 2)
