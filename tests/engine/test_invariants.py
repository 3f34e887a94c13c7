"""DESIGN.md invariants on the real engine: embargo safety, monotonic W, hold, GC, concurrency."""

from __future__ import annotations

import threading

import pytest

from tests.engine.feedkit import make_spec, read_tier, write_partition
from waterline import Feed
from waterline.clock import FixedClock, parse_instant

pytestmark = pytest.mark.spark

TIERS = {
    "rt": "TRUE",
    "d15": "event_time + INTERVAL 15 MINUTES <= WATERLINE()",
    "emb": "embargo_until <= WATERLINE()",
}
NOW = "2026-01-01T12:00:00Z"


def _row(i, when, v="x", emb=None):
    return {"id": i, "event_time": when, "status": "final", "v": v, "embargo_until": emb}


def test_nothing_is_released_before_the_trusted_clock(spark, tmp_path):
    """Far-future events, a skewed --as-of and a future embargo cannot open anything early."""
    spec = make_spec(tmp_path, TIERS)
    clock = FixedClock(NOW)
    feed = Feed(spec, spark=spark, clock=clock)
    write_partition(tmp_path, "a", [
        _row(1, "2026-01-01 11:00:00", emb="2026-01-01 11:30:00"),
        _row(2, "2099-01-01 00:00:00", emb="2099-01-01 00:00:00"),  # clock skew in the data
        _row(3, "2026-01-01 11:50:00", emb="2026-01-01 12:00:00.000001"),  # 1µs after now
    ])
    feed.ingest("a")
    result = feed.release(as_of=parse_instant("2100-01-01T00:00:00Z"))
    assert result.w_us == parse_instant(NOW)
    assert all(t.w_us <= clock.now_us() for t in result.tiers.values())
    assert set(read_tier(spark, spec, "d15")) == {("a", 1)}
    assert set(read_tier(spark, spec, "emb")) == {("a", 1)}
    clock.set("2026-01-01T12:00:00.000001Z")
    feed.release()
    assert set(read_tier(spark, spec, "emb")) == {("a", 1), ("a", 3)}


def test_event_mode_waterline_is_capped_by_the_clock(spark, tmp_path):
    spec = make_spec(tmp_path, TIERS, waterline={"mode": "event", "lateness": "5 minutes"})
    clock = FixedClock(NOW)
    feed = Feed(spec, spark=spark, clock=clock)
    write_partition(tmp_path, "a", [_row(1, "2026-01-01 11:00:00"), _row(2, "2099-01-01 00:00:00")])
    result = feed.ingest("a")
    assert result.event_waterline_us == parse_instant(NOW)  # max event - lateness, capped at now
    released = feed.release()
    assert released.w_us == parse_instant(NOW)
    assert set(read_tier(spark, spec, "d15")) == {("a", 1)}


def test_event_mode_waterline_follows_the_data(spark, tmp_path):
    spec = make_spec(tmp_path, TIERS, waterline={"mode": "event", "lateness": "5 minutes"})
    clock = FixedClock("2026-06-01T00:00:00Z")
    feed = Feed(spec, spark=spark, clock=clock)
    write_partition(tmp_path, "a", [_row(1, "2026-01-01 11:00:00"), _row(2, "2026-01-01 11:12:00")])
    feed.ingest("a")
    released = feed.release()
    assert released.w_us == parse_instant("2026-01-01T11:07:00Z")
    assert set(read_tier(spark, spec, "d15")) == set()  # 11:00 + 15 min > 11:07
    assert set(read_tier(spark, spec, "rt")) == {("a", 1), ("a", 2)}


def test_hold_keeps_the_tier_then_resume_catches_up(spark, tmp_path):
    spec = make_spec(tmp_path, TIERS)
    clock = FixedClock(NOW)
    feed = Feed(spec, spark=spark, clock=clock)
    write_partition(tmp_path, "a", [_row(1, "2026-01-01 10:00:00")])
    feed.ingest("a")
    feed.hold("d15")
    result = feed.release()
    assert result.tiers["d15"].held and read_tier(spark, spec, "d15") == {}
    assert result.tiers["d15"].w_us is None  # never released: no W_T to report
    assert feed.status().tiers["d15"].hold
    feed.resume("d15")
    feed.release()
    assert set(read_tier(spark, spec, "d15")) == {("a", 1)}


def test_gc_drops_dead_versions_without_changing_tiers(spark, tmp_path):
    spec = make_spec(tmp_path, TIERS)
    clock = FixedClock(NOW)
    feed = Feed(spec, spark=spark, clock=clock)
    write_partition(tmp_path, "a", [_row(1, "2026-01-01 10:00:00"), _row(2, "2026-01-01 10:00:00")])
    feed.ingest("a")
    write_partition(tmp_path, "a", [_row(1, "2026-01-01 10:00:00", v="y")])  # 1 corrected, 2 removed
    feed.ingest("a")
    feed.release()
    before = {t: read_tier(spark, spec, t) for t in TIERS}
    result = feed.gc()
    # Dead: v1 of id 1 (superseded everywhere); v1 and the applied removal of id 2.
    assert (result.versions_before, result.versions_removed) == (4, 3)
    clock.set("2026-01-02T00:00:00Z")
    feed.release()
    assert {t: read_tier(spark, spec, t) for t in TIERS} == before
    again = feed.ingest("a")  # identical re-run after GC still writes nothing
    assert again.versions_written == 0


def test_concurrent_releases_apply_once(spark, tmp_path):
    from waterline.engine.delta.storage import delta_table

    spec = make_spec(tmp_path, TIERS)
    clock = FixedClock(NOW)
    feed = Feed(spec, spark=spark, clock=clock)
    write_partition(tmp_path, "a", [_row(i, "2026-01-01 10:00:00") for i in range(5)])
    feed.ingest("a")
    before = delta_table(spec.tier_path("rt")).version()
    results, errors = [], []

    def run():
        try:
            results.append(Feed(spec, spark=spark, clock=clock).release())  # a writer of its own
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(r.tiers["rt"].released for r in results) == [0, 5]
    # One release step, one commit: the rows and the state (commit and table property, kept
    # across log cleanup) together; the loser re-read that state and committed nothing.
    after = delta_table(spec.tier_path("rt")).history(10)
    assert [c["operation"] for c in after if c["version"] > before] == ["WATERLINE RELEASE"]
    assert len(read_tier(spark, spec, "rt")) == 5


def test_tier_tables_are_plain_delta_for_other_readers(spark, tmp_path):
    from waterline.engine.delta.storage import delta_table

    spec = make_spec(tmp_path, TIERS)
    clock = FixedClock(NOW)
    feed = Feed(spec, spark=spark, clock=clock)
    write_partition(tmp_path, "a", [_row(1, "2026-01-01 10:00:00")])
    feed.ingest("a")
    feed.release()
    table = delta_table(spec.tier_path("d15")).to_pyarrow_table()
    assert {"_wl_partition", "_wl_seq", "_wl_start", "_wl_end", "id", "v"} <= set(table.column_names)
    assert table.num_rows == 1
    assert table.column("_wl_start").to_pylist() == [parse_instant("2026-01-01T10:15:00Z")]
