"""A tier added and a policy changed on a live feed (issue 56), on Spark + Delta, against the
model (`waterline.semantics.spec_history.SpecHistory`) at every release."""

from __future__ import annotations

import pytest

from tests.engine.respec_kit import Both, at, delay, window
from waterline.errors import WaterlineError

pytestmark = pytest.mark.spark

#: Events every 5 minutes from 10:00; revisions of some, a removal, a late one.
V1 = {i: (f"10:{i * 5:02d}", "a") for i in range(8)}
V2 = {**{i: (t, "b" if i % 3 == 0 else v) for i, (t, v) in V1.items() if i != 5}, 9: ("10:01", "late")}
V3 = {**V2, 2: ("10:10", "c"), 10: ("10:50", "new")}


def test_a_new_tier_starts_at_the_feeds_w_and_follows_the_model(spark, tmp_path):
    both = Both(spark, tmp_path, {"rt": ("TRUE", _true()), "d15": delay(15)})
    both.ingest(V1)
    both.release("10:20")
    both.ingest(V2)
    both.release("10:40")
    both.check()

    both.apply({"rt": ("TRUE", _true()), "d15": delay(15), "d20": delay(20), "win": window(0, 30)})
    assert both.w("d20") == at("10:40") and both.w("win") == at("10:40")  # built at the apply, at the feed's W
    both.check()
    both.ingest(V3)
    for hhmm in ("10:45", "11:05", "11:30"):
        both.release(hhmm)
        both.check()


def test_a_shortened_delay_makes_pending_versions_due_at_once(spark, tmp_path):
    both = Both(spark, tmp_path, {"d15": delay(15)})
    both.ingest(V1)
    both.release("10:40")
    before = both.tier("d15")
    assert len(before) == 6  # events up to 10:25

    assert not _status_at(both, "10:41").due  # the next version is due at 10:50 under the old policy
    both.apply({"d15": delay(10)})
    assert both.tier("d15") == before  # the apply publishes nothing itself
    assert _status_at(both, "10:41").due  # rescheduled: the sensor's status calls a release now
    both.release("10:40")  # the same W: what the new policy shows there
    assert len(both.tier("d15")) == 7
    both.check()
    both.ingest(V2)
    both.release("10:50")
    both.check()


def test_a_lengthened_delay_keeps_published_rows(spark, tmp_path):
    both = Both(spark, tmp_path, {"d15": delay(15), "win": window(0, 20)})
    both.ingest(V1)
    both.release("10:35")
    shown = both.tier("d15")
    assert len(shown) == 5

    both.apply({"d15": delay(30), "win": window(0, 40)})
    both.release("10:40")  # under the old policy 10:25 would be due; under the new, nothing new
    assert both.tier("d15") == shown
    both.check()
    both.ingest(V2)  # revisions of published rows: scheduled by the new policy, the old row kept meanwhile
    for hhmm in ("10:45", "11:00", "11:20"):
        both.release(hhmm)
        both.check()


def test_a_shortened_window_removes_kept_rows_at_their_new_expiry(spark, tmp_path):
    both = Both(spark, tmp_path, {"win": window(0, 60)})
    both.ingest(V1)
    both.release("10:30")
    assert len(both.tier("win")) == 7
    both.apply({"win": window(0, 10)})
    for hhmm in ("10:30", "10:36", "10:50"):
        both.release(hhmm)
        both.check()


def test_a_new_tier_after_gc_never_shows_a_version_gc_deleted(spark, tmp_path):
    both = Both(spark, tmp_path, {"rt": ("TRUE", _true())})
    both.ingest(V1)
    both.release("10:40")
    both.ingest({**V1, 0: ("10:35", "b")})  # a revision that supersedes id 0's first version at once in rt
    both.release("10:41")
    assert both.gc() == 1
    both.apply({"rt": ("TRUE", _true()), "d20": delay(20)})
    both.check()  # d20 would show id 0's first version (the revision is due at 10:55): gc deleted it
    assert ("a", 0) not in both.tier("d20") and len(both.tier("d20")) == 4
    both.release("11:30")
    both.check()
    assert both.tier("d20")[("a", 0)] == ("b", None)


def test_publishing_is_refused_while_held_is_rescheduled_for_an_unrecorded_spec(spark, tmp_path):
    """What a kill between held's reschedule and the version's record leaves (the crash test
    kills there for real): the old spec file is refused too, and `apply` of either file ends it."""
    from waterline.engine.release import respec
    from waterline.engine.tables.lease import feed_lease

    both = Both(spark, tmp_path, {"d15": delay(15)})
    both.ingest(V1)
    both.release("10:40")
    old = both.feed
    both.apply({"d15": delay(10)}, feed_apply=False)
    with feed_lease(old.spec.feed_dir, feed="f") as lease:
        respec.reschedule_held(spark, both.feed.spec, ["d15"], lease)
    with pytest.raises(WaterlineError, match="held's schedule of tier d15 .* run `waterline apply"):
        old.release(as_of=at("10:40"))
    with pytest.raises(WaterlineError, match="differs from the applied spec"):
        both.feed.release(as_of=at("10:40"))
    old.apply()  # back to the old policy: held rescheduled again, nothing recorded
    old.release(as_of=at("10:40"))
    assert len(both.tier("d15")) == 6


def _status_at(both: Both, hhmm: str):
    from waterline import Feed
    from waterline.clock import FixedClock

    return Feed(both.feed.spec, spark=both.spark, clock=FixedClock(at(hhmm))).status().tiers["d15"]


def _true():
    from waterline.semantics import NEG_INF, POS_INF
    from waterline.semantics.spec_history import Policy

    return Policy("TRUE", lambda p: ((NEG_INF, POS_INF),))
