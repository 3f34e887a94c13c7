"""The stream's in-memory index of each key's current held version (`current_index`),
against `waterline.semantics` and against held itself.

Micro-batches in the Kafka source's shape (key, value, topic, partition, offset,
timestamp) are appended by `stream_ingest.ingest_batch` one after another in this
process, as a running stream appends them, on a real Spark and real Delta tables: after
every batch the versions it wrote equal `semantics.stream_batch`, and the index equals
each key's current version computed from held's rows. Another writer's commit between
batches (a user's OPTIMIZE of held) must make the next batch read held again."""

from __future__ import annotations

import json
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from deltalake import DeltaTable
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.streams.kafkakit import DAY, HOUR, iso, stream_spec
from waterline import semantics as S
from waterline.engine.core import columns as C
from waterline.engine.spark import current_index
from waterline.engine.spark.stream_ingest import ingest_batch
from waterline.spec import load_spec

KAFKA = "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, timestampType INT"
KEYS = ["a", "b", "c", "d", "e"]
# (key, price or None for a tombstone, hours after DAY): hour 30 is the next day (a move)
records = st.tuples(st.sampled_from(KEYS), st.sampled_from([None, 1.0, 2.0]), st.sampled_from([1, 2, 30]))
upserts = st.tuples(st.sampled_from(KEYS), st.sampled_from([1.0, 2.0]), st.sampled_from([1, 2, 30]))
# each batch leads with an upsert of a key it does not repeat, so every batch writes a version
batches = st.lists(st.tuples(upserts, st.lists(records, max_size=5)).map(
    lambda b: [b[0]] + [r for r in b[1] if r[0] != b[0][0]]), min_size=3, max_size=6)


def _frame(spark, batch, first_offset: int):
    at = datetime.now(timezone.utc)
    rows = [(k.encode(), None if px is None else json.dumps({"px": px, "ts": iso(DAY + h * HOUR)}).encode(),
             "quotes", 0, first_offset + i, at, 0) for i, (k, px, h) in enumerate(batch)]
    return spark.createDataFrame(rows, KAFKA)


def _model_step(current, batch, first_offset: int):
    chunk = [S.StreamRecord(key=k, partition=None if px is None else iso(DAY + h * HOUR)[:10],
                            payload=None if px is None else {"px": px, "hours": h}, source_partition=0,
                            offset=first_offset + i) for i, (k, px, h) in enumerate(batch)]
    appended = S.stream_batch(current, chunk)
    return appended, S.stream_current(current, appended)


def _held_current(path: str) -> dict[str, tuple[str, bool]]:
    """Each key's current version from all of held's rows, in Python: of its newest seq, the
    row that is not a removal; as (partition, removed)."""
    rows = DeltaTable(path).to_pyarrow_table(columns=["id", C.SEQ, C.REMOVED, C.PARTITION]).to_pylist()
    best: dict[str, dict] = {}
    for row in rows:
        rank = (row[C.SEQ], not row[C.REMOVED])
        if row["id"] not in best or rank > (best[row["id"]][C.SEQ], not best[row["id"]][C.REMOVED]):
            best[row["id"]] = row
    return {k: (r[C.PARTITION], r[C.REMOVED]) for k, r in best.items()}


def _index(path: str) -> tuple[int, dict[str, tuple[str, bool]]]:
    kept = current_index._KEPT[path]
    rows = kept.frame.collect()
    return kept.advances, {r["id"]: (r[current_index.CURRENT]["p"], r[current_index.CURRENT]["r"]) for r in rows}


# no shrinking: each example is several Spark batches; the failing one is printed as found
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(batches=batches, optimize_after=st.integers(min_value=0, max_value=4))
def test_batch_after_batch_the_index_equals_held_and_the_versions_equal_the_semantics(spark, batches, optimize_after):
    root = Path(tempfile.mkdtemp(prefix="wl-index-"))
    spec = load_spec(stream_spec(root, "127.0.0.1:9", "quotes", tiers={"realtime": "TRUE"}))
    current: dict = {}
    offset, advanced = 0, 0
    for batch_id, batch in enumerate(batches):
        done = ingest_batch(spark, spec, "source", _frame(spark, batch, offset), batch_id)
        appended, current = _model_step(current, batch, offset)
        offset += len(batch)
        assert done.versions_written == len(appended), (batch_id, batch)
        if spec.held_path in current_index._KEPT:
            advances, index = _index(spec.held_path)
            advanced = max(advanced, advances)
            held = _held_current(spec.held_path)
            assert index == held, f"batch {batch_id}: the index differs from held"
            live = {k: p for k, (p, removed) in held.items() if not removed}
            assert live == {k: p for k, (p, _) in current.items()}
        if batch_id == optimize_after:  # another writer: the index no longer answers for held
            spark.sql(f"OPTIMIZE delta.`{spec.held_path}`")
    assert advanced >= 1, "no batch advanced the index: the test did not exercise it"
    current_index.forget(spec)
    assert spec.held_path not in current_index._KEPT
