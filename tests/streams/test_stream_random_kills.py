"""kill -9 of `waterline stream --once` at random points, again and again, then a run to the
end: the tiers equal `waterline.semantics` over the whole topic (what an uninterrupted run
leaves), every batch's versions are in held once, no record is lost. On a local warehouse
and on one in S3 (s3proxy).

A kill is either at a named boundary, at a random batch (``WATERLINE_CRASH_AT=point@n``:
the start of a batch, between its version files and its held commit, after the commit,
before or between the tiers' releases, after the batch before Spark's checkpoint), or a
SIGKILL from the test after a random delay, which lands anywhere: in the JVM's start, in a
Spark job, in the middle of a commit or of Spark's checkpoint. Each run after a kill starts
from the checkpoint the killed one left. The seed is in every failure message
(``WATERLINE_KILL_SEED`` replays one)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import polars
import pytest

from tests.interop.test_readers import _duckdb as duckdb_with_delta
from tests.streams.kafkakit import Quote, new_topic, produce, quote_value, quotes_model, stream_spec
from waterline import load
from waterline.engine.core import faults
from waterline.engine.delta import storage
from waterline.engine.ingest.stream.batch import applied_batch

pytestmark = pytest.mark.heavy(13)
CLI = str(Path(sys.executable).with_name("waterline"))
PER_BATCH = 6
CHUNK = 4 * PER_BATCH  # quotes produced whenever the runs so far applied all there were
KILLS = 10
MAX_RUNS = 24  # a boundary a run never reaches (no release due) ends the run without a kill
POINTS = (faults.STREAM_BATCH_START, faults.INGEST_BEFORE_COMMIT, faults.INGEST_AFTER_COMMIT,
          faults.RELEASE_BEFORE_MERGE, faults.RELEASE_BETWEEN_TIERS, faults.STREAM_BATCH_END)
TIERS = {"realtime": "TRUE", "delayed_15m": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"}


def _quotes(rng: random.Random, n: int) -> list[Quote]:
    """Revisions, repeats (equal to the current version), tombstones and moves across days."""
    return [(rng.choice("abcdefg"), None if rng.random() < 0.2 else float(rng.randint(1, 4)), rng.choice((0, 1, 24, 25)))
            for _ in range(n)]


def _run(spec: Path, kill) -> int:
    """One `waterline stream --once`, killed as ``kill`` says; its return code (-9: killed)."""
    kind, arg = kill
    env = dict(os.environ)
    if kind == "at":
        env[faults.ENV] = arg
    proc = subprocess.Popen([CLI, "stream", str(spec), "--once"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    try:
        out, _ = proc.communicate(timeout=arg if kind == "after" else 600)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
    assert proc.returncode in (0, -9), f"{kill}: exit {proc.returncode}:\n{out}"
    return proc.returncode


def _kill(rng: random.Random, run: int, pending: int):
    """The kill of run ``run``: the first between a batch's files and its commit, then
    boundaries and delays. A boundary's pass is one a run with ``pending`` batches to apply
    reaches (a drain releases once, after its last batch, when a tier is due: always here)."""
    if run == 0:
        return "at", f"{faults.INGEST_BEFORE_COMMIT}@{rng.randint(1, min(2, pending))}"
    if rng.random() < 0.6:
        point = rng.choice(POINTS)
        if point in (faults.RELEASE_BEFORE_MERGE, faults.RELEASE_BETWEEN_TIERS):
            return "at", point  # a drain releases once, after its last batch
        return "at", f"{point}@{rng.randint(1, min(3, pending))}"
    return "after", round(rng.uniform(4.0, 30.0), 1)


def _applied(feed) -> int:
    """The last batch id held has (-1: none)."""
    if not storage.is_delta_table(feed.spec.held_path):
        return -1
    (source,) = feed.spec.sources
    found = applied_batch(feed.spec, source)
    return -1 if found is None else found


def _held_rows(path: str) -> list[dict]:
    if not storage.is_delta_table(path):
        return []
    return storage.delta_table(path).to_pyarrow_table(columns=["id", "_wl_partition", "_wl_seq"]).to_pylist()


def _kill_and_finish(spark, bootstrap: str, root: Path, warehouse: str) -> None:
    seed = int(os.environ.get("WATERLINE_KILL_SEED") or random.randrange(2**32))
    rng = random.Random(seed)
    topic = new_topic(bootstrap)
    spec = stream_spec(root, bootstrap, topic, tiers=TIERS, extra={
        "warehouse": warehouse,
        "source": {"format": "kafka", "bootstrap": bootstrap, "topic": topic,
                   "value": {"format": "json", "schema": "px DOUBLE, ts STRING"},
                   "options": {"maxOffsetsPerTrigger": PER_BATCH}}})
    feed = load(spec, spark=spark)
    quotes: list[Quote] = []
    kills, history = 0, []
    while kills < KILLS and len(history) < MAX_RUNS:
        pending = len(quotes) // PER_BATCH - 1 - _applied(feed)
        if not pending:  # every produced quote is in held
            chunk = _quotes(rng, CHUNK)
            produce(bootstrap, topic, [(0, k, quote_value(px, h)) for k, px, h in chunk])
            quotes += chunk
            pending = CHUNK // PER_BATCH
        kill = _kill(rng, len(history), pending)
        started = time.monotonic()
        code = _run(spec, kill)
        kills += code == -9
        history.append((kill, code, round(time.monotonic() - started)))
        held = _held_rows(feed.spec.held_path)
        # after any kill: no version twice (a move is two versions of one seq, in two partitions)
        assert len({(r["_wl_partition"], r["id"], r["_wl_seq"]) for r in held}) == len(held), (seed, history)
    assert kills >= KILLS, f"seed {seed}: only {kills} of {len(history)} runs were killed: {history}"

    finished = feed.stream(once=True)  # the run to the end, in this process
    print(f"seed {seed}: runs (kill, exit, seconds): {history}")
    assert _applied(feed) == len(quotes) // PER_BATCH - 1, (seed, history)
    want_versions, want_rows = quotes_model(quotes, PER_BATCH)
    held = _held_rows(feed.spec.held_path)
    context = f"seed {seed}, runs {history}, last run {finished.summary()}"
    assert len(held) == want_versions, f"every batch's versions once, none lost: {context}"
    assert len({(r["_wl_partition"], r["id"], r["_wl_seq"]) for r in held}) == len(held), context
    for tier in TIERS:
        rows = feed.read(tier, columns=["id", "px", "_wl_partition"]).to_pylist()
        assert {r["id"]: (r["_wl_partition"], r["px"]) for r in rows} == want_rows, f"{tier}: {context}"
        assert len(rows) == len(want_rows), f"{tier}: one row per live key: {context}"
    if storage.local_folder(warehouse) is not None:
        # the log the commit writer left through kills (its batch summaries in commitInfo
        # included) is one every reader reads alike
        for path in [feed.spec.held_path, *(feed.tier_path(t) for t in TIERS)]:
            counts = {"deltalake": storage.delta_table(path).to_pyarrow_table().num_rows,
                      "polars": polars.read_delta(path).height,
                      "duckdb": duckdb_with_delta().execute(f"SELECT count(*) FROM delta_scan('{path}')").fetchone()[0],
                      "spark": spark.read.format("delta").load(path).count()}
            assert len(set(counts.values())) == 1, f"{path}: {counts}: {context}"


def test_ten_random_kills_then_a_finish_equal_the_semantics(kafka, spark, tmp_path):
    _kill_and_finish(spark, kafka.bootstrap, tmp_path, str(tmp_path / "warehouse"))


def test_ten_random_kills_with_the_warehouse_in_s3(kafka, s3_spark, s3proxy, tmp_path):
    _kill_and_finish(s3_spark, kafka.bootstrap, tmp_path, s3proxy.uri(f"kills-{uuid.uuid4().hex[:6]}"))
