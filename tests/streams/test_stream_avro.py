"""Avro record values (``value: {format: avro}``), bare and in Confluent's wire format: the
records a producer wrote with fastavro decode to the rows `waterline.semantics` says, and a
value that is not a datum of the schema (or lacks the framing) goes to the quarantine."""

from __future__ import annotations

import base64
import io
import struct

import pytest
from fastavro import parse_schema, schemaless_writer

from tests.streams.kafkakit import DAY, HOUR, iso, new_topic, produce, stream_spec
from waterline import load

SCHEMA = {"type": "record", "name": "Quote", "namespace": "dev.waterline.test",
          "fields": [{"name": "px", "type": "double"}, {"name": "ts", "type": "string"},
                     {"name": "venue", "type": ["null", "string"], "default": None}]}
SCHEMA_ID = 42


def _datum(px: float, hours: int, venue: str | None = None) -> bytes:
    out = io.BytesIO()
    schemaless_writer(out, parse_schema(SCHEMA), {"px": px, "ts": iso(DAY + hours * HOUR), "venue": venue})
    return out.getvalue()


def _framed(datum: bytes, wire: str) -> bytes:
    """As a Schema Registry serializer frames it: magic byte 0, the schema id (big-endian)."""
    return datum if wire == "plain" else b"\x00" + struct.pack(">I", SCHEMA_ID) + datum


@pytest.mark.parametrize("wire", ["plain", "confluent"])
def test_avro_values_decode_to_rows_and_a_bad_value_is_quarantined(kafka, spark, tmp_path, wire):
    topic = new_topic(kafka.bootstrap)
    bad = b"\x01" if wire == "plain" else _datum(9.0, 1)  # too short for a double / no magic byte
    records = [
        (0, "a", _framed(_datum(1.0, 10, "XNYS"), wire)),
        (0, "b", _framed(_datum(2.0, 10), wire)),
        (0, "a", _framed(_datum(1.5, 11, "XNYS"), wire)),  # a revision: the last record of a key wins
        (0, "c", _framed(_datum(3.0, 10), wire)),
        (0, "c", None),  # a tombstone
        (0, "d", bad),
    ]
    produce(kafka.bootstrap, topic, records)
    spec = stream_spec(tmp_path, kafka.bootstrap, topic, tiers={"realtime": "TRUE"}, extra={
        "source": {"format": "kafka", "bootstrap": kafka.bootstrap, "topic": topic,
                   "value": {"format": "avro", "schema": SCHEMA, "wire": wire}},
        "transform": "SELECT CAST(key AS STRING) AS id, value.px AS px, value.ts AS event_time, "
                     "value.venue AS venue FROM source"})
    feed = load(spec, spark=spark)
    run = feed.stream(once=True)

    applied = [b for b in run.batches if not b.skipped]
    assert sum(b.records for b in applied) == 5 and sum(b.quarantined for b in applied) == 1
    rows = {r["id"]: (r["_wl_partition"], r["px"], r["venue"])
            for r in feed.read("realtime", columns=["id", "px", "venue", "_wl_partition"]).to_pylist()}
    assert rows == {"a": ("2026-01-05", 1.5, "XNYS"), "b": ("2026-01-05", 2.0, None)}
    kept = spark.read.format("delta").load(feed.spec.quarantine_path).collect()
    assert [(r["_wl_reason"], base64.b64decode(r["_wl_row"])) for r in kept] == [
        (f"could not be parsed as avro (topic {topic}, partition 0, offset 5)", bad)]
