"""One micro-batch of records holding every type's extremes, end to end through a real Kafka
broker and Spark Structured Streaming: event times at 0001-01-01, 9999-12-31
23:59:59.999999 and within the tiers' intervals of Spark's last instant (year 294247), NaN,
±Inf, -0.0 and subnormal doubles, BIGINT's limits, DECIMAL(38, 2) at its limits, empty,
non-BMP, NUL-bearing, 100 KB and SQL-looking strings, a tombstone. Every tier equals
`waterline.semantics`; its files' statistics hold their values, and deltalake's filtered reads
of the tier and held return what its unfiltered read plus the filter does."""

from __future__ import annotations

import math

import pytest

from tests.engine.feedkit import iso_any_year
from tests.interop.extreme_draws import check_statistics, live_adds
from tests.interop.filtered_reads import deltalake_outcome
from tests.streams.kafkakit import new_topic, produce
from waterline import Feed
from waterline import semantics as S
from waterline.semantics import POS_INF

pytestmark = pytest.mark.spark

MIN = 60_000_000
LAST = "9999-12-31 23:59:59.999999"
LAST_US = 253_402_300_799_999_999
DEC = "9" * 36 + ".99"
TIERS = {
    "realtime": "TRUE",
    "delayed_15m": "event_time + INTERVAL 15 MINUTES <= WATERLINE()",
    "last_30m": "event_time <= WATERLINE() AND WATERLINE() < event_time + INTERVAL 30 MINUTES",
}
VALUE_SCHEMA = "px DOUBLE, ts STRING, big BIGINT, s STRING, dec STRING, flag BOOLEAN, day STRING"
TRANSFORM = ("SELECT CAST(key AS STRING) AS id, value.px AS px, value.ts AS event_time, value.big AS big, "
             "value.s AS s, CAST(value.dec AS DECIMAL(38, 2)) AS dec, value.flag AS flag, "
             "CAST(value.day AS DATE) AS day FROM source")
FILTERED = ("id", "px", "event_time", "big", "s", "dec", "flag", "day")
# (key, value or None for a tombstone, the event time in µs)
RECORDS = [
    ("k1", {"px": -math.inf, "ts": "0001-01-01 00:00:00", "big": -2**63, "s": "", "dec": "-" + DEC, "flag": True,
            "day": "0001-01-01"}, -62_135_596_800_000_000),
    ("k2", {"px": math.inf, "ts": LAST, "big": 2**63 - 1, "s": "\U0010ffff" * 40, "dec": DEC, "flag": False,
            "day": "9999-12-31"}, LAST_US),
    ("k3", {"px": math.nan, "ts": iso_any_year(POS_INF), "big": 0, "s": "x" * 100_000 + "y", "dec": "0.00",
            "flag": None, "day": None}, POS_INF),
    ("k4", {"px": -0.0, "ts": iso_any_year(POS_INF - 5 * MIN), "big": 1, "s": "a\x00b \U0001f600\U0001d11e",
            "dec": "1.50", "flag": True, "day": "2026-01-01"}, POS_INF - 5 * MIN),
    ("k5", {"px": 5e-324, "ts": "2026-01-05 00:05:00", "big": -1, "s": "../../etc/passwd'; DROP TABLE t; --",
            "dec": None, "flag": False, "day": "2000-02-29"}, 1_767_571_500_000_000),
    ("k6", {"px": 2.5, "ts": "2026-01-05 00:10:00", "big": 7, "s": "NVDA", "dec": "2.00", "flag": None,
            "day": "2026-01-05"}, 1_767_571_800_000_000),
    ("k6", None, 0),  # the tombstone after it: k6 never shows
    ("k9", None, 0),  # a tombstone of a key never seen: nothing
]


def _spec(root, bootstrap: str, topic: str) -> dict:
    return {
        "feed": "extremes", "warehouse": str(root / "warehouse"),
        "source": {"format": "kafka", "bootstrap": bootstrap, "topic": topic,
                   "value": {"format": "json", "schema": VALUE_SCHEMA}},
        "partitions": {"static": ["all"]}, "partition_by": "'all'", "remove_when": "value IS NULL",
        "transform": TRANSFORM, "key": ["id"], "event_time": "event_time", "tiers": TIERS,
    }


def _vis(tier: str, ts: int) -> tuple[S.Interval, ...]:
    branch = {"realtime": S.branch_interval(True, [], []),
              "delayed_15m": S.branch_interval(True, [(ts + 15 * MIN, False)], []),
              "last_30m": S.branch_interval(True, [(ts, False)], [(ts + 30 * MIN, True)])}[tier]
    return S.visibility([branch])


def _px(value: float | None):
    return "NaN" if value is not None and math.isnan(value) else (value, None if value is None else math.copysign(1, value))


def test_one_batch_of_extremes_end_to_end(kafka, spark, tmp_path):
    from waterline.clock import FixedClock
    from waterline.engine.delta.storage import delta_table
    from waterline.spec import spec_from_dict

    topic = new_topic(kafka.bootstrap)
    produce(kafka.bootstrap, topic, [(0, key, value) for key, value, _ in RECORDS])
    spec = spec_from_dict(_spec(tmp_path, kafka.bootstrap, topic), base_dir=tmp_path)
    feed = Feed(spec, spark=spark, clock=FixedClock(LAST_US))  # the trusted clock lets W reach year 9999
    records = [S.StreamRecord(key=k, partition=None if v is None else "all",
                              payload=None if v is None else {"px": v["px"], "ts": us}, source_partition=0, offset=i)
               for i, (k, v, us) in enumerate(RECORDS)]
    appended = S.stream_batch({}, records)
    versions = [S.Version(identity, 1, payload, {t: _vis(t, payload["ts"]) for t in TIERS})
                for identity, payload in appended]
    run = feed.stream(once=True)
    assert [b.records for b in run.batches if not b.skipped] == [len(RECORDS)]
    assert run.versions_written == len(appended) == 5
    assert feed.release(as_of=LAST_US).tiers["realtime"].w_us == LAST_US  # W at 9999-12-31 23:59:59.999999
    shown = {}
    for tier in TIERS:
        want = {identity[1]: _px(v.payload["px"]) for identity, v in S.tier_state(versions, tier, LAST_US).items()}
        rows = delta_table(spec.tier_path(tier)).to_pyarrow_table(columns=["id", "px"]).to_pylist()
        assert {r["id"]: _px(r["px"]) for r in rows} == want, tier
        shown[tier] = sorted(want)
    # the bounds past the last instant are NULL: k3 and k4 are never due in delayed_15m nor shown
    # in last_30m; k2 (9999-12-31 23:59:59.999999) is due 15 minutes after W
    assert shown == {"realtime": ["k1", "k2", "k3", "k4", "k5"], "delayed_15m": ["k1", "k5"], "last_30m": ["k2"]}
    for path in (*(spec.tier_path(t) for t in TIERS), spec.held_path):
        assert check_statistics(path, FILTERED) == len(live_adds(path)) >= 1
        outcome = deltalake_outcome(path, FILTERED)
        assert not outcome.missed, f"{path}: {outcome.missed}"
        assert outcome.checked >= 2 * (len(FILTERED) - 1), outcome


def test_a_record_a_guard_cannot_be_computed_on_is_named_and_nothing_is_committed(kafka, spark, tmp_path):
    """A guard overflowing on one record's event time (year 294247) stops the batch with one
    line naming the feed, stream batch, tier, column and the record's key; held stays empty."""
    from waterline.clock import FixedClock
    from waterline.engine.delta.table_log import TableLog
    from waterline.errors import WaterlineError
    from waterline.spec import spec_from_dict

    topic = new_topic(kafka.bootstrap)
    produce(kafka.bootstrap, topic, [(0, key, value) for key, value, _ in RECORDS[4:6]]
            + [(0, "k7", {**RECORDS[3][1], "ts": iso_any_year(POS_INF - MIN)})])
    data = _spec(tmp_path, kafka.bootstrap, topic)
    data["tiers"] = {"late": "event_time + INTERVAL 1 DAY > TIMESTAMP '2026-01-01 00:00:00' "
                             "AND event_time <= WATERLINE()"}
    spec = spec_from_dict(data, base_dir=tmp_path)
    feed = Feed(spec, spark=spark, clock=FixedClock(LAST_US))
    with pytest.raises(WaterlineError) as caught:
        feed.stream(once=True)
    message = str(caught.value)
    assert "\n" not in message
    for part in ("feed extremes", "batch", "tier late", "column event_time", "key id='k7'"):
        assert part in message, (part, message)
    held = TableLog.open(spec.held_path)
    assert not held.exists or not held.to_arrow().num_rows  # nothing committed
