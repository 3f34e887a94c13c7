"""A Kafka topic into held and the tiers: the stream rules against `waterline.semantics`,
with a real broker, real Spark Structured Streaming and real Delta tables."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable

from tests.engine.feedkit import local_reads
from tests.streams.kafkakit import iso, new_topic, produce, stream_spec
from waterline import load
from waterline import semantics as S
from waterline.engine.ingest.stream.offsets import batch_bound
from waterline.engine.stream_run import checkpoint_path
from waterline.errors import WaterlineError

DAY1 = 1_767_571_200_000_000  # 2026-01-05T00:00:00Z
H = 3_600_000_000


def _tier(feed, tier: str) -> dict[str, tuple[str, float]]:
    table = feed.read(tier, columns=["id", "px", "_wl_partition"]).to_pylist()
    return {r["id"]: (r["_wl_partition"], r["px"]) for r in table}


def _model(records) -> dict[str, tuple[str, float]]:
    """What held's current versions are after ``records`` in one batch, per the semantics."""
    stream = [S.StreamRecord(key=k, partition=None if v is None else iso(v["ts"])[:10] if isinstance(v, dict) else None,
                             payload=None if v is None else {"px": v["px"]}, source_partition=p, offset=i)
              for i, (p, k, v) in enumerate(records) if not isinstance(v, bytes)]
    current = S.stream_current({}, S.stream_batch({}, stream))
    return {k: (part, payload["px"]) for k, (part, payload) in current.items()}


@pytest.mark.parametrize("reads", [None, "0"], ids=["default", "spark-jobs"])
def test_a_drained_topic_collapses_revisions_tombstones_and_moves_and_releases_the_realtime_tier(kafka, spark, tmp_path,
                                                                                                  reads):
    # "0": the batch is one too large to collect, read by one Spark pass that writes its
    # versions before it knows a partition value is bad (then discarded and written again)
    with local_reads(reads):
        _drain_collapses_and_releases(kafka, spark, tmp_path)


def _drain_collapses_and_releases(kafka, spark, tmp_path):
    topic = new_topic(kafka.bootstrap)
    t = DAY1 + 10 * H
    records = [
        (0, "a", {"px": 1.0, "ts": t}), (0, "b", {"px": 2.0, "ts": t}), (0, "c", {"px": 3.0, "ts": t}),
        (0, "a", {"px": 1.5, "ts": t}),  # a revision: the last record of a key wins
        (0, "b", None),  # a tombstone removes b
        (0, "c", {"px": 3.0, "ts": t + 24 * H}),  # c moves to the next day
        (0, "d", b"{not json"),  # quarantined, never a row
        (0, "f", {"px": 9.0, "ts": DAY1 - 240 * H}),  # 2025-12-26: before the scheme's first day, quarantined
    ]
    produce(kafka.bootstrap, topic, [(p, k, {"px": v["px"], "ts": iso(v["ts"])} if isinstance(v, dict) else v)
                                     for p, k, v in records])
    feed = load(stream_spec(tmp_path, kafka.bootstrap, topic), spark=spark)
    run = feed.stream(once=True)

    applied = [b for b in run.batches if not b.skipped]
    assert sum(b.records for b in applied) == 7 and sum(b.quarantined for b in applied) == 2
    kept = {r["_wl_reason"]: r["_wl_row"] for r in DeltaTable(feed.spec.quarantine_path).to_pyarrow_table().to_pylist()}
    assert kept == {f"could not be parsed as json (topic {topic}, partition 0, offset 6)": "{not json",
                    "partition_by gave '2025-12-26': before the first partition 2026-01-01":
                        '{"id":"f","px":9.0,"event_time":"2025-12-26T00:00:00.000Z"}'}
    assert run.releases, "the realtime tier has rows due at once: released in the same run"
    want = {k: v for k, v in _model([(p, k, v) for p, k, v in records if k != "f"]).items()}
    assert want == {"a": ("2026-01-05", 1.5), "c": ("2026-01-06", 3.0)}
    assert _tier(feed, "realtime") == want
    # event times are in January: long due under the 15-minute delay too
    feed.release()
    assert _tier(feed, "delayed_15m") == want

    again = feed.stream(once=True)  # nothing new on the topic: no batch, nothing written
    assert again.versions_written == 0
    produce(kafka.bootstrap, topic, [(0, "a", {"px": 1.5, "ts": iso(t)}),  # equal to the current version
                                     (0, "c", None), (0, "e", {"px": 5.0, "ts": iso(t)})])
    third = feed.stream(once=True)
    assert third.versions_written == 2  # c removed, e inserted; a unchanged appends nothing
    assert _tier(feed, "realtime") == {"a": ("2026-01-05", 1.5), "e": ("2026-01-05", 5.0)}
    # Spark's checkpoint told each batch's size before its first job (no transaction markers
    # here, so exactly): what lets a small batch be read by one job
    point = checkpoint_path(feed.spec, "source")
    assert [batch_bound(point, b) for b in (0, 1)] == [8, 3]
    assert batch_bound(point, 2) is None  # no such batch


def test_a_replayed_batch_is_skipped_by_the_held_tables_transaction(kafka, spark, tmp_path):
    from waterline.engine.ingest.stream.batch import applied_batch, ingest_batch
    from waterline.engine.ingest.stream.source import read_once

    topic = new_topic(kafka.bootstrap)
    produce(kafka.bootstrap, topic, [(0, "a", {"px": 1.0, "ts": iso(DAY1)}), (0, "b", {"px": 2.0, "ts": iso(DAY1)})])
    feed = load(stream_spec(tmp_path, kafka.bootstrap, topic), spark=spark)
    records = read_once(spark, feed.spec, "source")
    first = ingest_batch(spark, feed.spec, "source", records, 0)
    assert (first.skipped, first.versions_written) == (False, 2)
    assert applied_batch(feed.spec, "source") == 0
    seq = feed.status().seq
    replay = ingest_batch(spark, feed.spec, "source", records, 0)
    assert replay.skipped and replay.versions_written == 0 and feed.status().seq == seq


def test_a_warm_up_runs_copies_of_the_topics_records_through_a_batch_and_writes_nothing(kafka, spark, tmp_path):
    from waterline.engine.stream_run import warm_up

    topic = new_topic(kafka.bootstrap)
    feed = load(stream_spec(tmp_path, kafka.bootstrap, topic), spark=spark)
    assert warm_up(spark, feed.spec, "source", 100) == 0  # an empty topic: nothing to run
    records = [(0, "a", {"px": 1.0, "ts": iso(DAY1)}), (0, "a", None), (0, "b", b"{not json"),
               (0, "c", {"px": 3.0, "ts": iso(DAY1)})]
    produce(kafka.bootstrap, topic, records)
    before = sorted(p for p in tmp_path.rglob("*"))
    # 25 copies of the 4 records (a key removed, one to quarantine, a row): nothing kept
    assert warm_up(spark, feed.spec, "source", 100) == 100
    assert sorted(p for p in tmp_path.rglob("*")) == before
    run = feed.stream(once=True)  # the real batch starts from the topic's first offset
    # (over Spark Connect the client learns the batches from held's commits: c's is one)
    applied = [b for b in run.batches if not b.skipped]
    assert (sum(b.records for b in applied), sum(b.quarantined for b in applied)) == (3, 1)
    assert _tier(feed, "realtime") == {"c": ("2026-01-05", 3.0)}
    assert DeltaTable(feed.spec.quarantine_path).to_pyarrow_table().num_rows == 1


def test_a_batch_feed_refuses_stream_keys_and_a_stream_feed_refuses_partition_ingest(kafka, spark, tmp_path):
    from waterline.errors import SpecError
    from waterline.spec import load_spec

    topic = new_topic(kafka.bootstrap)
    path = stream_spec(tmp_path, kafka.bootstrap, topic)
    feed = load(path, spark=spark)
    with pytest.raises(WaterlineError, match="streams from Kafka: `waterline stream`"):
        feed.ingest("2026-01-05")
    with pytest.raises(SpecError, match="partition_by: required for a stream feed"):
        load_spec(path, overrides={"partition_by": None})
    with pytest.raises(SpecError, match="transform: a stream transform maps each record to at most one row"):
        load_spec(path, overrides={"transform": "SELECT CAST(key AS STRING) AS id, count(*) AS px, max(timestamp) "
                                                "AS event_time FROM source GROUP BY key"})
    with pytest.raises(SpecError, match=r"options.kafka.sasl.jaas.config: credentials never go in a spec: set "
                                        r"WATERLINE_KAFKA_SASL_JAAS_CONFIG"):
        load_spec(path, overrides={"source": {"options": {"kafka.sasl.jaas.config": "x"}}})


def test_a_key_moved_then_removed_or_moved_back_leaves_one_row_or_none(kafka, spark, tmp_path):
    """A move is two versions of one seq (a removal in the old partition, the row in the new
    one); the next record of the key must diff against the row, never the removal: a
    tombstone removes it, a move back removes it from the day it moved to."""
    topic = new_topic(kafka.bootstrap)
    keys = [f"k{i}" for i in range(8)]
    feed = load(stream_spec(tmp_path, kafka.bootstrap, topic, tiers={"realtime": "TRUE"}), spark=spark)
    rounds = [
        [(0, k, {"px": 1.0, "ts": iso(DAY1)}) for k in keys],  # all on 2026-01-05
        [(0, k, {"px": 2.0, "ts": iso(DAY1 + 24 * H)}) for k in keys],  # all move to 2026-01-06
        [(0, k, None) for k in keys[:4]] + [(0, k, {"px": 3.0, "ts": iso(DAY1)}) for k in keys[4:]],
    ]
    for records in rounds:
        produce(kafka.bootstrap, topic, records)
        feed.stream(once=True)
    assert _tier(feed, "realtime") == {k: ("2026-01-05", 3.0) for k in keys[4:]}
    versions = DeltaTable(feed.spec.held_path).to_pyarrow_table(columns=["id"]).num_rows
    assert versions == 8 + 16 + 4 + 8  # inserts, moves (2 each), removals, moves back (2 each)


def test_a_batch_releases_the_tiers_it_made_due_at_once_before_the_others(kafka, spark, tmp_path):
    """The real-time tier is released in a release of its own, committed before the other
    tiers are staged: the delayed tier, released after it, records a later W_T."""
    import time

    from waterline.clock import SystemClock
    from waterline.engine.delta.table_log import TableLog
    from waterline.engine.tables import feed_tables
    from waterline.engine.stream_run import BatchSink
    from waterline.engine.ingest.stream.source import read_once

    topic = new_topic(kafka.bootstrap)
    now = int(time.time() * 1e6)
    produce(kafka.bootstrap, topic, [(0, "a", {"px": 1.0, "ts": iso(now)}), (0, "b", {"px": 2.0, "ts": iso(now)})])
    feed = load(stream_spec(tmp_path, kafka.bootstrap, topic), spark=spark)
    records = read_once(spark, feed.spec, "source")
    done, released = BatchSink(feed.spec, "source", SystemClock())(records, 0)

    assert set(done.due_by_tier) == {"realtime", "delayed_15m"}
    assert done.due_by_tier["realtime"] <= done.due_by_tier["delayed_15m"] - 15 * 60 * 1_000_000 + 60 * 1_000_000
    assert list(released.tiers) == ["realtime", "delayed_15m"]
    assert (released.tiers["realtime"].released, released.tiers["delayed_15m"].released) == (2, 0)
    realtime_w = feed_tables.tier_state(TableLog.open(feed.spec.tier_path("realtime"))).w
    delayed_w = feed_tables.tier_state(TableLog.open(feed.spec.tier_path("delayed_15m"))).w
    assert realtime_w == released.tiers["realtime"].w_us and delayed_w == released.tiers["delayed_15m"].w_us
    assert realtime_w < delayed_w, "one release of both tiers would have given them one W"
    assert set(_tier(feed, "realtime")) == {"a", "b"} and _tier(feed, "delayed_15m") == {}
