"""A spec change applied to a live feed, end to end on Spark and Delta (issue 56)."""

from __future__ import annotations

import pytest

from tests.engine.feedkit import far_future_clock, make_spec, read_tier, write_partition
from waterline import Feed
from waterline.clock import parse_instant
from waterline.errors import WaterlineError

TIERS = {"rt": "TRUE", "d15": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"}


def _row(i, v="x"):
    return {"id": i, "event_time": "2026-01-01 10:00:00", "status": "final", "v": v}


def test_a_retired_tier_is_released_no_more_and_keeps_its_table(spark, tmp_path):
    feed = Feed(make_spec(tmp_path, TIERS), spark=spark, clock=far_future_clock())
    write_partition(tmp_path, "a", [_row(1), _row(2)])
    feed.ingest("a")
    feed.release(as_of=parse_instant("2026-01-01T11:00:00Z"))
    before = read_tier(spark, feed.spec, "d15")
    assert len(before) == 2

    retired = Feed(make_spec(tmp_path, {"rt": "TRUE"}), spark=spark, clock=far_future_clock())
    with pytest.raises(WaterlineError, match="tier d15 retired; run `waterline apply"):
        retired.release()
    applied, diff = retired.apply()
    assert applied.version == 2 and diff.tiers_retired == ("d15",)

    write_partition(tmp_path, "a", [_row(1, v="y"), _row(2), _row(3)])
    result = retired.ingest("a")
    assert (result.inserted, result.updated) == (1, 1)
    retired.release(as_of=parse_instant("2026-01-01T12:00:00Z"))
    assert {k: r["v"] for k, r in read_tier(spark, retired.spec, "rt").items()} == {
        ("a", 1): "y", ("a", 2): "x", ("a", 3): "x"}
    assert read_tier(spark, feed.spec, "d15") == before  # kept as of its last release
    # every release commit names the spec version it was released under
    assert _named_versions(feed.spec, "rt") == [1, 2] and _named_versions(feed.spec, "d15") == [1]


def _named_versions(spec, tier):
    from waterline.engine.delta.table_log import TableLog
    from waterline.engine.proof.commit_record import commit_records

    records, _ = commit_records(TableLog.open(spec.tier_path(tier)))
    return [c.spec for _, c in sorted(records.items()) if c.operation != "CREATE TABLE" and c.w_us is not None]
