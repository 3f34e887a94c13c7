"""The release proof judges each commit by the spec version it was released under (issue 56).

A delay lengthened after honest releases leaves them clean (today's policy would call them
breaches); a release forced early under the lengthened policy is caught with the due instant
of the policy in force. Real Spark, Delta change data feeds and `_wl_specs`.
"""

from __future__ import annotations

import shutil
import time

import pytest

from tests.engine.feedkit import make_spec, write_partition
from tests.engine.model import MINUTE
from tests.engine.test_proof import _prove_all
from tests.engine.test_release_differential import _iso

pytestmark = pytest.mark.spark

D10 = {"d": "event_time + INTERVAL 10 MINUTES <= WATERLINE()"}
D20 = {"d": "event_time + INTERVAL 20 MINUTES <= WATERLINE()"}


def _row(i: int, event_us: int) -> dict:
    return {"id": i, "event_time": _iso(event_us), "status": "final", "embargo_until": None, "v": "x"}


def test_a_lengthened_delay_leaves_earlier_releases_clean_and_catches_a_forced_release(spark, tmp_path):
    from waterline import Feed
    from waterline.clock import FixedClock
    from waterline.engine.tables import applied_spec

    now = int(time.time() * 1_000_000)
    events = {1: now - 15 * MINUTE, 2: now - 15 * MINUTE, 3: now - 25 * MINUTE}
    v1 = make_spec(tmp_path, D10)
    write_partition(tmp_path, "a", [_row(1, events[1])])
    first = Feed(v1, spark=spark, clock=FixedClock(now))
    first.ingest("a")
    first.release()  # row 1 due at now - 5 min under the 10-minute delay: on time

    v2 = make_spec(tmp_path, D20)
    # What `waterline apply` records for the lengthened delay (the engine's apply of a changed
    # policy after data is another change of issue 56; the proof reads only this record).
    applied_spec._record(v2, 2, now, "tier d: policy 10 -> 20 minutes")
    write_partition(tmp_path, "a", [_row(i, e) for i, e in events.items()])
    ahead = Feed(v2, spark=spark, clock=FixedClock(now + 60 * MINUTE))  # a clock an hour ahead
    ahead.ingest("a")
    ahead.release()  # row 2 due at now + 5 min under the 20-minute delay: forced early; row 3 due

    proof = _prove_all(spark, v2)["d"]
    released = [r for r in proof.releases if r.inserted]
    assert [(r.spec, r.inserted, r.breaches) for r in released] == [(1, 1, 0), (2, 2, 1)]
    [breach] = proof.breaches
    assert (breach.key, breach.due_us, breach.change) == (("a", 2), events[2] + 20 * MINUTE, "insert")

    # Judged by today's policy alone (as before versions were recorded), row 1's honest
    # release is a breach too: the proof above really used version 1 for it.
    shutil.rmtree(tmp_path / "wh" / "f" / "_wl_specs")
    today = _prove_all(spark, v2)["d"]
    assert sorted(b.key for b in today.breaches) == [("a", 1), ("a", 2)]


def test_a_shortened_delay_does_not_hide_an_earlier_breach(spark, tmp_path):
    """A release forced early under a 20-minute delay stays a breach, with its 20-minute due
    instant, after the delay is shortened to 10 minutes (under which it would have been due)."""
    from waterline import Feed
    from waterline.clock import FixedClock
    from waterline.engine.tables import applied_spec

    now = int(time.time() * 1_000_000)
    event = now - 15 * MINUTE  # due at now - 5 min under 10 minutes, now + 5 min under 20
    v1 = make_spec(tmp_path, D20)
    write_partition(tmp_path, "a", [_row(1, event)])
    ahead = Feed(v1, spark=spark, clock=FixedClock(now + 60 * MINUTE))
    ahead.ingest("a")
    ahead.release()
    v2 = make_spec(tmp_path, D10)
    applied_spec._record(v2, 2, now, "tier d: policy 20 -> 10 minutes")  # as in the test above

    proof = _prove_all(spark, v2)["d"]
    [breach] = proof.breaches
    assert (breach.key, breach.due_us) == (("a", 1), event + 20 * MINUTE)
    assert [r.spec for r in proof.releases if r.inserted] == [1]


def test_a_retired_tier_is_still_proven_and_its_breach_stays(spark, tmp_path):
    """Retiring a tier keeps its table, so its releases stay in the proof: an honest release
    stays clean and a release forced early stays a breach, by default and when named."""
    from waterline import Feed
    from waterline.clock import FixedClock

    now = int(time.time() * 1_000_000)
    event = now - 15 * MINUTE  # due at now - 5 min under 10 minutes, now + 5 min under 20
    both = make_spec(tmp_path, {**D10, "r": "event_time + INTERVAL 20 MINUTES <= WATERLINE()"})
    write_partition(tmp_path, "a", [_row(1, event)])
    ahead = Feed(both, spark=spark, clock=FixedClock(now + 60 * MINUTE))  # forces r early
    ahead.ingest("a")
    ahead.release()
    retired = Feed(make_spec(tmp_path, D10), spark=spark, clock=FixedClock(now + 61 * MINUTE))
    version, diff = retired.apply()
    assert (version.version, diff.tiers_retired) == (2, ("r",))
    assert retired.retired_tiers() == {"r": 2}

    proofs = retired.audit_history()
    assert set(proofs) == {"d", "r"}
    assert proofs["d"].breaches == ()
    [breach] = proofs["r"].breaches
    assert (breach.key, breach.due_us) == (("a", 1), event + 20 * MINUTE)
    assert [r.spec for r in proofs["r"].releases if r.inserted] == [1]
    assert set(retired.audit_history(tiers=["r"])) == {"r"}


def test_rows_kept_across_a_lengthened_delay_are_not_early_and_a_row_added_by_hand_is(spark, tmp_path):
    """`audit_current` checks what a tier shows at W_T. After a delay lengthened 10 -> 20
    minutes, a row the tier showed before the apply stays (kept) though the 20-minute policy
    does not show it yet: not early. A row written into the tier by hand since is."""
    from waterline import Feed
    from waterline.clock import FixedClock

    now = int(time.time() * 1_000_000)
    v1 = make_spec(tmp_path, D10)
    write_partition(tmp_path, "a", [_row(1, now - 15 * MINUTE), _row(2, now - 30 * MINUTE)])
    first = Feed(v1, spark=spark, clock=FixedClock(now))
    first.ingest("a")
    first.release()
    later = Feed(make_spec(tmp_path, D20), spark=spark, clock=FixedClock(now + MINUTE))
    later.apply()
    later.release()  # row 1 (due at now + 5 min under 20 minutes) is kept, row 2 shown by both
    assert sorted(r["id"] for r in later.read("d").to_pylist()) == [1, 2]
    audit = later.audit_current()["d"]
    assert (audit.rows, audit.violations) == (2, 0)

    from pyspark.sql import functions as F

    tier = spark.read.format("delta").load(v1.tier_path("d"))
    added = tier.filter("id = 1").withColumn("id", F.lit(9).cast(tier.schema["id"].dataType))
    added.select(*tier.columns).write.format("delta").mode("append").save(v1.tier_path("d"))
    audit = later.audit_current()["d"]
    assert (audit.violations, audit.early_sample) == (1, (("a", 9),))
