"""`waterline.engine.ingest.collected_versions` against `waterline.semantics.stream_batch`, no JVM.

Held is built by random batches through the oracle (revisions, tombstones, moves between
partitions, tombstones of absent keys); the next batch's records, from two Kafka
partitions and in a random order, then go through `last_records`, `batch_versions` and `stamped`
with held's rows as the current versions it looks up. The versions must be the oracle's,
removals stamped as `schedule.removal_schedule` stamps them. The stream property test
holds the same code to the oracle through the real broker and Spark.
"""

from __future__ import annotations

import math
import random

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from waterline.engine.core import columns as C
from waterline.engine.ingest.collected_versions import KIND, batch_counts, batch_versions, last_records, stamped
from waterline.semantics import NEG_INF, StreamRecord, stream_batch, stream_current

TIER = "t"
VIS = pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64())]))
REMOVE = "_wl_remove"

record = st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["p0", "p1"]),
                   st.one_of(st.none(), st.sampled_from(["x", "y"])), st.integers(0, 1))
batches = st.lists(st.lists(record, max_size=6), min_size=1, max_size=5)
ORDER = ("topic", "kafka_partition", "offset")


def records(batch: list) -> list[StreamRecord]:
    offsets = {0: 0, 1: 0}
    out = []
    for k, p, v, kafka_partition in batch:
        out.append(StreamRecord(key=k, partition=None if v is None else p, payload=None if v is None else {"v": v},
                                source_partition=kafka_partition, offset=offsets[kafka_partition]))
        offsets[kafka_partition] += 1
    return out


@settings(max_examples=400, deadline=None)
@given(batches, st.randoms(use_true_random=False))
def test_a_batch_appends_the_oracles_versions(history, shuffle: random.Random):
    *before, last_batch = history
    current: dict = {}
    held = []  # every version appended so far: key, seq, removed, hash (the payload), partition
    for seq, batch in enumerate(before, start=1):
        appended = stream_batch(current, records(batch))
        held += [{"k": k, C.SEQ: seq, C.REMOVED: v is None, C.HASH: None if v is None else v["v"], C.PARTITION: p}
                 for (p, k), v in appended]
        current = stream_current(current, appended)
    raw = records(last_batch)
    shuffle.shuffle(raw)  # the collect gives a batch's rows in no particular order
    batch_rows = pa.Table.from_pylist(
        [{"k": r.key, "v": None if r.payload is None else r.payload["v"], REMOVE: r.payload is None,
          C.PARTITION: r.partition, C.HASH: None if r.payload is None else r.payload["v"],
          C.vis(TIER): None, C.tau(TIER): 5, C.last(TIER): 9,
          "topic": "t", "kafka_partition": r.source_partition, "offset": r.offset} for r in raw],
        schema=pa.schema([("k", pa.string()), ("v", pa.string()), (REMOVE, pa.bool_()), (C.PARTITION, pa.string()),
                          (C.HASH, pa.string()), (C.vis(TIER), VIS), (C.tau(TIER), pa.int64()),
                          (C.last(TIER), pa.int64()), ("topic", pa.string()), ("kafka_partition", pa.int32()),
                          ("offset", pa.int64())]))
    rows = last_records(batch_rows, ["k"], ORDER)
    assert rows.num_rows == len({r.key for r in raw})
    current_rows = pa.Table.from_pylist(held, schema=pa.schema([
        ("k", pa.string()), (C.SEQ, pa.int64()), (C.REMOVED, pa.bool_()), (C.HASH, pa.string()),
        (C.PARTITION, pa.string())]))

    out = stamped(batch_versions(rows, current_rows, ["k"], ["k", "v"], [TIER], remove_column=REMOVE),
                  seq=len(history), ingested_at_us=1_000).to_pylist()

    expected = stream_batch(current, records(last_batch))
    got = [((r[C.PARTITION], r["k"]), None if r[C.REMOVED] else {"v": r["v"]}) for r in out]
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    for r in out:
        assert r[C.SEQ] == len(history) and r[C.INGESTED_AT].timestamp() == 0.001
        if r[C.REMOVED]:
            assert (r[KIND], r["v"], r[C.HASH], r[C.vis(TIER)], r[C.tau(TIER)], r[C.last(TIER)]) == \
                ("remove", None, None, [], NEG_INF, NEG_INF)
        else:
            now = current.get(r["k"])
            moved_or_new = now is None or now[0] != r[C.PARTITION]
            assert r[KIND] == ("insert" if moved_or_new else "update")
            assert (r[C.HASH], r[C.tau(TIER)], r[C.last(TIER)]) == (r["v"], 5, 9)


def test_last_records_groups_keys_as_sql_does():
    """NaN is one key and -0.0 is 0.0, as in Spark's window over the key; the greatest
    (topic, partition, offset) wins, whatever the rows' order."""
    rows = pa.table({"k": [float("nan"), 0.0, float("nan"), -0.0, 1.0],
                     "topic": ["t", "t", "t", "t", "s"], "kafka_partition": [0, 1, 1, 0, 0],
                     "offset": [9, 3, 2, 7, 1], "n": [1, 2, 3, 4, 5]})
    last = {(("nan" if math.isnan(r["k"]) else r["k"]), r["n"]) for r in last_records(rows, ["k"], ORDER).to_pylist()}
    assert last == {("nan", 3), (0.0, 2), (1.0, 5)}


def test_batch_counts_quarantine_bad_partitions_and_count_as_spark_does():
    rows = pa.table({"_wl_reason": [None, None, "null key column k", None, None],
                     "_wl_remove": [False, False, False, True, False],
                     "_wl_partition": ["2026-01-02", "bad", "bad", None, "2026-01-03"],
                     "_wl_event_us": [5, 99, 100, None, 7]})
    asked = []

    def bad_partition(value: str) -> str | None:
        asked.append(value)
        return f"partition_by gave {value!r}" if value == "bad" else None

    checked, counts = batch_counts(rows, reason="_wl_reason", remove="_wl_remove", partition="_wl_partition",
                                   event_us="_wl_event_us", bad_partition=bad_partition)
    assert sorted(asked) == ["2026-01-02", "2026-01-03", "bad"]  # once per value, removals' NULL not asked
    assert checked.column("_wl_reason").to_pylist() == [None, "partition_by gave 'bad'", "null key column k", None, None]
    # the newest valid upsert's event time: not the quarantined rows' 99 and 100
    assert counts == {"rows": 5, "quarantined": 2, "max_event": 7}
    empty, none = batch_counts(rows.slice(0, 0), reason="_wl_reason", remove="_wl_remove", partition="_wl_partition",
                               event_us="_wl_event_us", bad_partition=bad_partition)
    assert none == {"rows": 0, "quarantined": 0, "max_event": None} and empty.num_rows == 0
