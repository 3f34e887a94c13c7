"""The options waterline gives Spark's Kafka source (no JVM, no broker)."""

from __future__ import annotations

from waterline.engine.ingest.stream.source import CONSUMER_DEFAULTS, reader_options
from waterline.spec import spec_from_dict


def _source(tmp_path, options: dict | None = None):
    kafka = {"format": "kafka", "bootstrap": "127.0.0.1:9092", "topic": "quotes",
             **({"options": options} if options else {})}
    spec = spec_from_dict({"feed": "q", "warehouse": str(tmp_path), "source": kafka,
                           "partitions": {"daily": {"start": "2026-01-01"}}, "key": ["id"],
                           "event_time": "event_time", "partition_by": "CAST(to_date(event_time) AS STRING)",
                           "transform": "SELECT CAST(key AS STRING) AS id, timestamp AS event_time FROM source",
                           "tiers": {"realtime": "TRUE"}})
    return next(iter(spec.sources.values()))


def test_the_consumer_reads_in_large_fetches_unless_the_spec_says_otherwise(tmp_path, monkeypatch):
    monkeypatch.delenv("WATERLINE_KAFKA_MAX_POLL_RECORDS", raising=False)
    given = reader_options(_source(tmp_path))
    assert {k: given[k] for k in CONSUMER_DEFAULTS} == {"kafka.max.partition.fetch.bytes": "16777216",
                                                         "kafka.max.poll.records": "10000"}
    assert given["failOnDataLoss"] == "true" and given["subscribe"] == "quotes"
    mine = reader_options(_source(tmp_path, {"kafka.max.poll.records": "500", "maxOffsetsPerTrigger": "10"}))
    assert mine["kafka.max.poll.records"] == "500" and mine["maxOffsetsPerTrigger"] == "10"
    assert mine["kafka.max.partition.fetch.bytes"] == "16777216"
    # an environment variable is the deployment's word, over both
    monkeypatch.setenv("WATERLINE_KAFKA_MAX_POLL_RECORDS", "42")
    assert reader_options(_source(tmp_path, {"kafka.max.poll.records": "500"}))["kafka.max.poll.records"] == "42"
