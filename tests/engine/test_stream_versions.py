"""`waterline.engine.core.stream_versions` against `waterline.semantics.stream_batch`, no JVM.

Held is built by random batches through the oracle (revisions, tombstones, moves between
partitions, tombstones of absent keys); the next batch's collapsed records then go through
`batch_versions` with held's rows as the current versions it looks up. The versions must
be the oracle's, removals stamped as `schedule.removal_schedule` stamps them. The stream
property test holds the same code to the oracle through the real broker and Spark.
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from waterline.engine.core import columns as C
from waterline.engine.core.stream_versions import KIND, batch_versions
from waterline.semantics import NEG_INF, StreamRecord, collapse, stream_batch, stream_current

TIER = "t"
VIS = pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64())]))
REMOVE = "_wl_remove"

record = st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["p0", "p1"]),
                   st.one_of(st.none(), st.sampled_from(["x", "y"])))
batches = st.lists(st.lists(record, max_size=6), min_size=1, max_size=5)


def records(batch: list) -> list[StreamRecord]:
    return [StreamRecord(key=k, partition=None if v is None else p, payload=None if v is None else {"v": v},
                         source_partition=0, offset=i) for i, (k, p, v) in enumerate(batch)]


@settings(max_examples=400, deadline=None)
@given(batches)
def test_a_batch_appends_the_oracles_versions(history):
    *before, last_batch = history
    current: dict = {}
    held = []  # every version appended so far: key, seq, removed, hash (the payload), partition
    for seq, batch in enumerate(before, start=1):
        appended = stream_batch(current, records(batch))
        held += [{"k": k, C.SEQ: seq, C.REMOVED: v is None, C.HASH: None if v is None else v["v"], C.PARTITION: p}
                 for (p, k), v in appended]
        current = stream_current(current, appended)
    last = [r for r in collapse(records(last_batch)).values()]
    rows = pa.Table.from_pylist(
        [{"k": r.key, "v": None if r.payload is None else r.payload["v"], REMOVE: r.payload is None,
          C.PARTITION: r.partition, C.HASH: None if r.payload is None else r.payload["v"],
          C.vis(TIER): None, C.tau(TIER): 5, C.last(TIER): 9} for r in last],
        schema=pa.schema([("k", pa.string()), ("v", pa.string()), (REMOVE, pa.bool_()), (C.PARTITION, pa.string()),
                          (C.HASH, pa.string()), (C.vis(TIER), VIS), (C.tau(TIER), pa.int64()),
                          (C.last(TIER), pa.int64())]))
    current_rows = pa.Table.from_pylist(held, schema=pa.schema([
        ("k", pa.string()), (C.SEQ, pa.int64()), (C.REMOVED, pa.bool_()), (C.HASH, pa.string()),
        (C.PARTITION, pa.string())]))

    out = batch_versions(rows, current_rows, ["k"], ["k", "v"], [TIER], remove_column=REMOVE, seq=len(history),
                         ingested_at_us=1_000).to_pylist()

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
