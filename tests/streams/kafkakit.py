"""Helpers of the stream tests: a topic per test, records produced as a user's producer would."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from waterline import semantics as S
from waterline.local import kafka_broker

#: One record: (Kafka partition, key, value dict or None for a tombstone, or raw bytes).
Record = tuple[int, str, "Mapping[str, Any] | bytes | None"]


def new_topic(bootstrap: str, partitions: int = 1) -> str:
    topic = f"t-{uuid.uuid4().hex[:10]}"
    kafka_broker.create_topic(bootstrap, topic, partitions=partitions)
    return topic


def produce(bootstrap: str, topic: str, records: Iterable[Record]) -> None:
    """Produce ``records`` in order (idempotent producer: each lands once, in order per partition)."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for partition, key, value in records:
        body = value if value is None or isinstance(value, bytes) else json.dumps(value).encode()
        producer.produce(topic, key=key.encode(), value=body, partition=partition)
    assert producer.flush(30) == 0, "records not delivered"


def iso(us: int) -> str:
    return datetime.fromtimestamp(us / 1e6, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def stream_spec(root: Path, bootstrap: str, topic: str, *, tiers: Mapping[str, str] | None = None,
                extra: Mapping[str, Any] | None = None) -> Path:
    """A stream feed of quotes: JSON values {px, ts}, the record key is the row's key, a
    tombstone removes it, daily partitions by event time."""
    import yaml

    spec = {
        "feed": "quotes",
        "warehouse": str(root / "warehouse"),
        "source": {"format": "kafka", "bootstrap": bootstrap, "topic": topic,
                   "value": {"format": "json", "schema": "px DOUBLE, ts STRING"}},
        "partitions": {"daily": {"start": "2026-01-01"}},
        "transform": "SELECT CAST(key AS STRING) AS id, value.px AS px, value.ts AS event_time FROM source",
        "partition_by": "CAST(to_date(event_time) AS STRING)",
        "remove_when": "value IS NULL",
        "key": ["id"],
        "event_time": "event_time",
        "tiers": dict(tiers or {"realtime": "TRUE", "delayed_15m": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"}),
        **(extra or {}),
    }
    path = root / "quotes.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


#: A quote record of the crash tests: (key, px or None for a tombstone, hours after `DAY`).
Quote = tuple[str, "float | None", int]
DAY = 1_767_571_200_000_000  # 2026-01-05T00:00Z
HOUR = 3_600_000_000


def quote_value(px: float | None, hours: int) -> dict | None:
    return None if px is None else {"px": float(px), "ts": iso(DAY + hours * HOUR)}


def quotes_model(quotes: list[Quote], per_batch: int) -> tuple[int, dict[str, tuple[str, float]]]:
    """What `waterline.semantics` says micro-batches of ``per_batch`` quotes (one Kafka
    partition, offsets from 0) leave: how many held versions, and each live key's
    (partition, px). The payload is the price and the event time: a record that moves a
    row an hour within its day is a new version, not one equal to the current."""
    current, versions = {}, 0
    for start in range(0, len(quotes), per_batch):
        chunk = [S.StreamRecord(key=k, partition=None if px is None else iso(DAY + h * HOUR)[:10],
                                payload=None if px is None else {"px": float(px), "hours": h}, source_partition=0,
                                offset=start + i)
                 for i, (k, px, h) in enumerate(quotes[start:start + per_batch])]
        appended = S.stream_batch(current, chunk)
        versions += len(appended)
        current = S.stream_current(current, appended)
    return versions, {k: (part, payload["px"]) for k, (part, payload) in current.items()}
