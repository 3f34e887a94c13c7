"""The local broker against real clients: confluent-kafka produces, Spark's Kafka source reads.

Spark reads with the jars `make setup` put beside the Delta jars (spark-sql-kafka-0-10,
kafka-clients), so no Spark start downloads a package."""

from __future__ import annotations

import uuid

from confluent_kafka import Producer

from waterline.local import kafka_broker


def _produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]], partition: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for key, value in records:
        producer.produce(topic, key=key, value=value, partition=partition)
    assert producer.flush(30) == 0


def test_spark_reads_what_was_produced_with_keys_tombstones_partitions_and_offsets(kafka, spark):
    topic = f"ticks-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(kafka.bootstrap, topic, partitions=2)
    kafka_broker.create_topic(kafka.bootstrap, topic, partitions=2)  # a second create is a no-op
    _produce(kafka.bootstrap, topic, [(b"a", b'{"px": 1}'), (b"b", b'{"px": 2}'), (b"a", None)], partition=0)
    _produce(kafka.bootstrap, topic, [(b"c", b'{"px": 3}')], partition=1)

    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest").load()
            .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "topic", "partition", "offset")
            .collect())
    got = sorted((r.partition, r.offset, r.key, r.value, r.topic) for r in rows)
    assert got == [(0, 0, "a", '{"px": 1}', topic), (0, 1, "b", '{"px": 2}', topic), (0, 2, "a", None, topic),
                   (1, 0, "c", '{"px": 3}', topic)]


def test_a_second_start_on_a_running_broker_is_refused_with_the_stop_command(kafka):
    import pytest

    from waterline.errors import WaterlineError

    with pytest.raises(WaterlineError, match=r"already runs .* `waterline kafka stop --dir"):
        kafka_broker.start(kafka.state_dir)


def test_a_cluster_id_never_starts_with_a_dash_which_kafka_storage_reads_as_an_option():
    """1 in 64 base64url UUIDs starts with "-"; `kafka-storage format -t -x...` then fails
    (a fresh-clone run of the suite met it). 2,000 ids miss a regression with p < 1e-13."""
    import base64

    ids = [kafka_broker._cluster_id() for _ in range(2000)]
    assert not [i for i in ids if i.startswith("-")]
    assert all(len(base64.urlsafe_b64decode(i + "==")) == 16 for i in ids) and len(set(ids)) == len(ids)


def test_the_cluster_id_draw_ends_even_if_every_draw_is_refused(monkeypatch):
    """The draw of a cluster id not starting with "-" is bounded: with a random source that
    only gives such ids it ends with one line rather than drawing for ever."""
    import pytest

    from waterline.errors import WaterlineError

    dash = uuid.UUID(bytes=b"\xf8" + bytes(15))  # base64url of 0xf8... starts with "-"
    monkeypatch.setattr(kafka_broker.uuid, "uuid4", lambda: dash)
    with pytest.raises(WaterlineError, match="random UUIDs in a row"):
        kafka_broker._cluster_id()
    monkeypatch.undo()
    assert not kafka_broker._cluster_id().startswith("-")
