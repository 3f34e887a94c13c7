"""A policy operator that fails on one row's value (a guard's overflow past year 294247, a
cast of text that is no number) stops the ingest with one line naming the feed, partition,
tier, column and the row's key; nothing is committed, and once the row is fixed the next
ingest and release publish it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.engine.feedkit import far_future_clock, iso_any_year, make_spec, read_tier, write_partition
from waterline.errors import WaterlineError
from waterline.semantics import POS_INF

pytestmark = pytest.mark.spark

TIERS = {
    "late": "event_time + INTERVAL 1 DAY > TIMESTAMP '2026-01-01 00:00:00' AND event_time <= WATERLINE()",
    "coded": "CAST(v AS INT) >= 0 AND event_time <= WATERLINE()",
}


def _row(key: int, event_time: str, v: str = "1") -> dict:
    return {"id": key, "event_time": event_time, "status": "final", "embargo_until": None, "v": v}


@pytest.mark.parametrize(("tier", "bad", "column", "fragment"), [
    ("late", _row(7, iso_any_year(POS_INF - 60_000_000)), "event_time", "event_time + INTERVAL '1' DAY"),
    ("coded", _row(8, "2026-01-01 10:00:00", v="not a number"), "v", "CAST(v AS INT)"),
])
def test_a_row_a_policy_cannot_be_computed_on_is_named_and_nothing_is_committed(spark, tier, bad, column, fragment):
    from waterline import Feed
    from waterline.engine.delta.table_log import TableLog

    root = Path(tempfile.mkdtemp(prefix="wl-row-error-"))
    spec = make_spec(root, {tier: TIERS[tier]})
    feed = Feed(spec, spark=spark, clock=far_future_clock())
    good = _row(1, "2026-01-01 10:00:00")
    write_partition(root, "a", [good])
    feed.ingest("a")
    version = TableLog.open(spec.held_path).version
    write_partition(root, "a", [good, bad])
    with pytest.raises(WaterlineError) as caught:
        feed.ingest("a")
    message = str(caught.value)
    assert "\n" not in message
    for part in ("feed f", "partition a", f"tier {tier}", f"column {column}", f"key id={bad['id']}", fragment):
        assert part in message, (part, message)
    assert TableLog.open(spec.held_path).version == version  # nothing committed
    fixed = {**bad, "event_time": "2026-01-01 10:05:00", "v": "2"}
    write_partition(root, "a", [good, fixed])
    assert feed.ingest("a").versions_written == 1
    feed.release(as_of="2026-01-01T11:00:00Z")
    assert set(read_tier(spark, spec, tier)) == {("a", 1), ("a", bad["id"])}
