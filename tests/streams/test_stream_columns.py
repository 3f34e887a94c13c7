"""A stream feed gains an output column by `waterline apply` (issue 56): Kafka micro-batches
into held carry it after the apply, records without it write no version, and the tiers
read it, NULL for the versions written before."""

from __future__ import annotations

import pytest
import yaml

from tests.streams.kafkakit import iso, new_topic, produce, stream_spec
from waterline import load
from waterline.engine.delta.table_log import TableLog
from waterline.errors import WaterlineError

DAY1 = 1_767_571_200_000_000  # 2026-01-05T00:00:00Z
H = 3_600_000_000
TRANSFORM = "SELECT CAST(key AS STRING) AS id, value.px AS px, value.ts AS event_time{venue} FROM source"


def _tier(feed, tier: str) -> dict:
    return {r["id"]: (r["px"], r.get("venue")) for r in feed.read(tier).to_pylist()}


def test_a_stream_takes_a_column_added_by_apply(kafka, spark, tmp_path):
    topic = new_topic(kafka.bootstrap)
    t = DAY1 + 10 * H
    path = stream_spec(tmp_path, kafka.bootstrap, topic, tiers={"realtime": "TRUE"},
                       extra={"transform": TRANSFORM.format(venue="")})
    produce(kafka.bootstrap, topic, [(0, "a", {"px": 1.0, "ts": iso(t)}), (0, "b", {"px": 2.0, "ts": iso(t)})])
    feed = load(path, spark=spark)
    assert feed.stream(once=True).versions_written == 2

    spec = yaml.safe_load(path.read_text())
    spec["source"]["value"]["schema"] = "px DOUBLE, ts STRING, venue STRING"
    spec["transform"] = TRANSFORM.format(venue=", CAST(value.venue AS STRING) AS venue")
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    changed = load(path, spark=spark)
    with pytest.raises(WaterlineError, match="column venue added; run `waterline apply"):
        changed.stream(once=True)
    assert changed.apply()[1].columns_added == ("venue",)
    assert ("venue", "string") in TableLog.open(changed.spec.held_path).columns()

    produce(kafka.bootstrap, topic, [(0, "a", {"px": 1.0, "ts": iso(t)}),  # venue NULL: the same row
                                     (0, "b", {"px": 2.0, "ts": iso(t), "venue": "XNYS"}),
                                     (0, "c", {"px": 3.0, "ts": iso(t), "venue": "BATS"})])
    run = changed.stream(once=True)
    assert run.versions_written == 2  # b filled, c new; a unchanged
    assert _tier(changed, "realtime") == {"a": (1.0, None), "b": (2.0, "XNYS"), "c": (3.0, "BATS")}
