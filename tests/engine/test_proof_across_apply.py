"""The release proof across a real `waterline apply` on a live feed (issue 56).

A lengthened delay keeps the rows the tier already showed (docs/semantics.md, "When the spec
changes"); the tier's next release rewrites them with their kept interval, the same version
(`_wl_seq`, payload) in an ``update_postimage``. That rewrite releases nothing: the audit must
not judge it as a release under the new policy (it used to, a false breach). A release forced
early after the apply is still caught, by the policy in force, on the Spark path (the
reconciling release after an apply) and on the staged path (the release after that).
Real Spark, Delta change data feeds, `Feed.apply`.
"""

from __future__ import annotations

import time

import pytest

from tests.engine.feedkit import local_reads, make_spec, write_partition
from tests.engine.model import MINUTE
from tests.engine.respec_kit import Both, delay, window
from tests.engine.test_proof import _prove_all
from tests.engine.test_release_differential import _iso
from tests.engine.test_spec_reschedule import V1, V2

pytestmark = pytest.mark.spark

D10 = {"d": "event_time + INTERVAL 10 MINUTES <= WATERLINE()"}
D20 = {"d": "event_time + INTERVAL 20 MINUTES <= WATERLINE()"}


@pytest.mark.parametrize("reads", [None, "0"], ids=["default", "spark-jobs"])
def test_a_lengthened_delay_applied_to_a_live_feed_audits_clean(spark, tmp_path, reads):
    with local_reads(reads):
        both = Both(spark, tmp_path, {"d15": delay(15), "win": window(0, 20)})
        both.ingest(V1)
        both.release("10:35")
        both.apply({"d15": delay(30), "win": window(0, 40)})
        both.release("10:40")  # kept rows rewritten with their kept interval; none shown by the new policy
        both.check()
        both.ingest(V2)
        for hhmm in ("10:45", "11:00", "11:20"):
            both.release(hhmm)
            both.check()
    proofs = _prove_all(both.spark, both.feed.spec)
    for tier, proof in proofs.items():
        assert proof.clean, (tier, proof.breaches[:3], proof.unproven)
    # the rewrite really happened, in a release judged by the new version
    retimed = [r for r in proofs["d15"].releases if r.spec == 2 and r.updated]
    assert retimed and retimed[0].w_us == both.w("d15") - 40 * MINUTE
    assert {r.spec for r in proofs["d15"].releases if r.inserted or r.updated} == {1, 2}


def test_a_release_forced_early_after_an_apply_is_caught_by_the_policy_in_force(spark, tmp_path):
    """Row 1 went out on time under 10 minutes and is kept by the apply of 20 minutes: its
    rewrite at the next release is no breach. Rows 2 (in the reconciling Spark release) and 3
    (in the staged release after it), released by a clock an hour ahead, are breaches with
    their 20-minute due instants."""
    from waterline import Feed
    from waterline.clock import FixedClock

    now = int(time.time() * 1_000_000)
    events = {1: now - 15 * MINUTE, 2: now - 15 * MINUTE, 3: now - 14 * MINUTE}
    write_partition(tmp_path, "a", [_row(1, events[1])])
    first = Feed(make_spec(tmp_path, D10), spark=spark, clock=FixedClock(now))
    first.ingest("a")
    first.release()  # row 1 due at now - 5 min: on time
    applied, _ = Feed(make_spec(tmp_path, D20), spark=spark, clock=FixedClock(now)).apply()
    assert applied.version == 2

    write_partition(tmp_path, "a", [_row(i, events[i]) for i in (1, 2)])
    ahead = Feed(make_spec(tmp_path, D20), spark=spark, clock=FixedClock(now + 60 * MINUTE))
    ahead.ingest("a")
    assert ahead.release().tiers["d"].updated == 1  # row 1 rewritten (its kept interval), row 2 early
    write_partition(tmp_path, "a", [_row(i, events[i]) for i in (1, 2, 3)])
    later = Feed(make_spec(tmp_path, D20), spark=spark, clock=FixedClock(now + 70 * MINUTE))
    later.ingest("a")
    later.release()  # row 3 early, on the staged path

    proof = _prove_all(spark, ahead.spec)["d"]
    assert sorted((b.key, b.due_us, b.change) for b in proof.breaches) == [
        (("a", 2), events[2] + 20 * MINUTE, "insert"), (("a", 3), events[3] + 20 * MINUTE, "insert")]
    changed = [r for r in proof.releases if r.inserted or r.updated]
    assert [(r.spec, r.inserted, r.updated, r.breaches) for r in changed] == [(1, 1, 0, 0), (2, 1, 1, 1), (2, 1, 0, 1)]
    assert changed[1].operation == "MERGE" and changed[2].operation != "MERGE", [r.operation for r in changed]


def _row(i: int, event_us: int) -> dict:
    return {"id": i, "event_time": _iso(event_us), "status": "final", "embargo_until": None, "v": "x"}


def test_a_hand_edit_under_the_same_seq_is_judged_and_a_rewrite_of_the_interval_is_not(spark, tmp_path):
    """Only the interval columns may change for an update to keep its version: an UPDATE by
    hand that moves a row's event time (same ``_wl_seq``) into the future is a breach; one that
    only rewrites ``_wl_start`` of another row releases nothing."""
    from waterline import Feed
    from waterline.clock import FixedClock
    from waterline.engine.core.sqltext import delta_path

    now = int(time.time() * 1_000_000)
    write_partition(tmp_path, "a", [_row(1, now - 30 * MINUTE), _row(2, now - 30 * MINUTE)])
    feed = Feed(make_spec(tmp_path, D10), spark=spark, clock=FixedClock(now))
    feed.ingest("a")
    feed.release()
    table = delta_path(feed.spec.tier_path("d"))
    spark.sql(f"UPDATE {table} SET event_time = event_time + INTERVAL 1 DAY WHERE id = 1")
    spark.sql(f"UPDATE {table} SET _wl_start = _wl_start + 1 WHERE id = 2")
    proof = _prove_all(spark, feed.spec)["d"]
    assert [(b.key, b.change) for b in proof.breaches] == [(("a", 1), "update")]
    assert [(r.operation, r.updated, r.breaches) for r in proof.releases if r.updated] == [("UPDATE", 1, 1),
                                                                                          ("UPDATE", 1, 0)]
