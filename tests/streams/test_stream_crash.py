"""kill -9 of `waterline stream --once` at its commit boundaries, then a restart: the tiers
equal the semantics of the whole topic, every batch is in held once, no record is lost.

Three records per micro-batch (``maxOffsetsPerTrigger``), so the run has several batches and
the crash lands in the first: before its held commit (files written, nothing committed),
after it (committed, Spark's checkpoint not yet: the restart replays the batch, which the
held table's transaction skips) and before the release that follows it."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.streams.kafkakit import new_topic, produce, quote_value, quotes_model, stream_spec
from waterline import load
from waterline.engine.core import faults
from waterline.engine.delta import storage

CLI = str(Path(sys.executable).with_name("waterline"))
RECORDS = [("a", 1, 0), ("b", 2, 0), ("c", 3, 0), ("a", 4, 0), ("b", None, 0), ("d", 5, 1),
           ("c", 6, 24), ("e", 7, 1), ("a", 4, 0), ("d", None, 0), ("f", 8, 2), ("e", 9, 25)]
PER_BATCH = 3


def _stream(spec: Path, crash: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, **{faults.ENV: crash})
    return subprocess.run([CLI, "stream", str(spec), "--once"], capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.parametrize("point", [faults.INGEST_BEFORE_COMMIT, faults.INGEST_AFTER_COMMIT,
                                   faults.RELEASE_BEFORE_MERGE])
def test_kill_9_in_the_first_batch_then_a_restart_equals_the_semantics(kafka, spark, tmp_path, point):
    topic = new_topic(kafka.bootstrap)
    produce(kafka.bootstrap, topic, [(0, k, quote_value(px, h)) for k, px, h in RECORDS])
    spec = stream_spec(tmp_path, kafka.bootstrap, topic, tiers={"realtime": "TRUE"},
                       extra={"source": {"format": "kafka", "bootstrap": kafka.bootstrap, "topic": topic,
                                         "value": {"format": "json", "schema": "px DOUBLE, ts STRING"},
                                         "options": {"maxOffsetsPerTrigger": PER_BATCH}}})
    crashed = _stream(spec, point)
    assert crashed.returncode == -9, crashed.stdout + crashed.stderr
    # the restart: in this process (a JVM start fewer), from the checkpoint the killed run left
    feed = load(spec, spark=spark)
    finished = feed.stream(once=True)

    want_versions, want_rows = quotes_model(RECORDS, PER_BATCH)
    held = DeltaTable(feed.spec.held_path).to_pyarrow_table(columns=["id", "_wl_partition", "_wl_seq"]).to_pylist()
    assert len(held) == want_versions, "every batch's versions once: none lost, none twice"
    # a move is a removal in the old partition and a version in the new one, of one seq
    assert len({(r["_wl_partition"], r["id"], r["_wl_seq"]) for r in held}) == len(held)
    rows = feed.read("realtime", columns=["id", "px", "_wl_partition"]).to_pylist()
    assert {r["id"]: (r["_wl_partition"], r["px"]) for r in rows} == want_rows
    replays = [b.batch_id for b in finished.batches if b.skipped]
    # killed after the first held commit: Spark replays the batch, held skips it. A drain
    # releases after its last batch, so a kill there left every batch checkpointed and none
    # released: the restart has no batch to run, and its release publishes them all.
    assert replays == {faults.INGEST_BEFORE_COMMIT: [], faults.INGEST_AFTER_COMMIT: [0],
                       faults.RELEASE_BEFORE_MERGE: []}[point]
    if point == faults.RELEASE_BEFORE_MERGE:
        assert not finished.batches and len(finished.releases) == 1, finished.summary()


TWO_TIERS = {"realtime": "TRUE", "delayed_15m": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"}
# The first batch's writes: held's version 0, then each tier's (`faults.FIRST_WRITES`), then the
# first release. ``by_release``: the run after the kill is `waterline release`, then the stream.
FIRST_WRITES = [
    (faults.CREATE_HELD_BEFORE, False),
    (faults.CREATE_HELD_AFTER, True),  # issue 53: held there, no tier; every later run spun for ever
    (faults.CREATE_TIER_BEFORE, False),  # held's version 0 and the batch committed, no tier yet
    (f"{faults.CREATE_BETWEEN_TIERS}@1", False),
    (f"{faults.STREAM_BATCH_END}@1", False),  # the first batch committed, Spark's first checkpoint not
    (faults.RELEASE_AFTER_TIERS, False),
    (f"{faults.STREAM_BATCH_START}@2", False),  # a later batch handed over, nothing of it read
]


@pytest.mark.parametrize("point,by_release", FIRST_WRITES, ids=[p for p, _ in FIRST_WRITES])
def test_kill_9_in_the_first_batchs_table_creation_then_the_next_run_completes(kafka, spark, tmp_path, point,
                                                                              by_release):
    _kill_in_first_writes(kafka, spark, tmp_path, str(tmp_path / "warehouse"), point, by_release)


S3_CASES = [
    (faults.CREATE_HELD_AFTER, True),  # the first batch: held without tiers
    (f"{faults.INGEST_AFTER_COMMIT}@2", False),  # a later batch's held commit made, not checkpointed
]


@pytest.mark.parametrize("point,by_release", S3_CASES, ids=[p for p, _ in S3_CASES])
def test_kill_9_with_the_warehouse_in_s3_then_the_next_run_completes(kafka, s3_spark, s3proxy, tmp_path, point,
                                                                     by_release):
    """The same on S3 (s3proxy), where "create only if absent" is a conditional PUT."""
    _kill_in_first_writes(kafka, s3_spark, tmp_path, s3proxy.uri(f"first-{uuid.uuid4().hex[:6]}"), point, by_release)


def _kill_in_first_writes(kafka, spark, root: Path, warehouse: str, point: str, by_release: bool) -> None:
    topic = new_topic(kafka.bootstrap)
    produce(kafka.bootstrap, topic, [(0, k, quote_value(px, h)) for k, px, h in RECORDS])
    spec = stream_spec(root, kafka.bootstrap, topic, tiers=TWO_TIERS,
                       extra={"warehouse": warehouse,
                              "source": {"format": "kafka", "bootstrap": kafka.bootstrap, "topic": topic,
                                         "value": {"format": "json", "schema": "px DOUBLE, ts STRING"},
                                         "options": {"maxOffsetsPerTrigger": PER_BATCH}}})
    crashed = _stream(spec, point)
    assert crashed.returncode == -9, crashed.stdout + crashed.stderr
    feed = load(spec, spark=spark)
    if point == faults.CREATE_HELD_AFTER:
        assert storage.delta_table(feed.spec.held_path).version() == 0
        assert not any(storage.is_delta_table(feed.tier_path(t)) for t in TWO_TIERS), "tiers created before the kill"
    if by_release:
        feed.release()  # the release, which finds held and no tier, creates them
        assert all(storage.is_delta_table(feed.tier_path(t)) for t in TWO_TIERS)
    feed.stream(once=True)

    want_versions, want_rows = quotes_model(RECORDS, PER_BATCH)
    held = storage.delta_table(feed.spec.held_path).to_pyarrow_table(
        columns=["id", "_wl_partition", "_wl_seq"]).to_pylist()
    assert len(held) == want_versions, "every batch's versions once: none lost, none twice"
    for tier in TWO_TIERS:  # each tier equals what `waterline.semantics` says of the whole topic
        rows = feed.read(tier, columns=["id", "px", "_wl_partition"]).to_pylist()
        assert {r["id"]: (r["_wl_partition"], r["px"]) for r in rows} == want_rows, tier
        assert len(rows) == len(want_rows), tier
