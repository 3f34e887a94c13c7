"""`waterline.engine.ingest.stream.held_keys`: the lookup a stream keeps of held's files, against a
read of every file, on real Delta tables written by deltalake (no JVM): appends, a
compaction that removes files, a table made again at the same path, and the row limit."""

from __future__ import annotations

import random
import shutil
import struct

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from waterline.engine.core import columns as C
from waterline.engine.ingest.stream import held_keys
from waterline.engine.delta.arrow_files import DataFile, read_matching
from waterline.engine.delta.table_log import TableLog

SCHEMA = pa.schema([("k", pa.string()), (C.SEQ, pa.int64()), (C.REMOVED, pa.bool_()), (C.HASH, pa.string()),
                    (C.PARTITION, pa.string())])


@pytest.fixture(autouse=True)
def _nothing_kept():
    held_keys.forget()
    yield
    held_keys.forget()


def _append(path, rng: random.Random, seq: int, *, mode: str = "append") -> None:
    rows = [{"k": f"k{rng.randrange(30)}", C.SEQ: seq, C.REMOVED: rng.random() < 0.2,
             C.HASH: rng.choice("xyz"), C.PARTITION: rng.choice(["2026-01-05", "2026-01-06"])}
            for _ in range(rng.randrange(1, 12))]
    write_deltalake(str(path), pa.Table.from_pylist(rows, schema=SCHEMA), mode=mode, partition_by=[C.PARTITION])


def _newest(rows: pa.Table) -> dict:
    best: dict = {}
    for r in rows.to_pylist():
        rank = (r[C.SEQ], not r[C.REMOVED])
        if r["k"] not in best or rank > best[r["k"]][0]:
            best[r["k"]] = (rank, r[C.HASH], r[C.PARTITION])
    return best


def _every_file(path, keys: pa.Table) -> pa.Table:
    log = TableLog.open(str(path))
    files = [DataFile(a.path, a.partition_values) for a in log.add_files()]
    return read_matching(str(path), files, SCHEMA, keys)


@pytest.mark.parametrize("seed", range(6))
def test_the_kept_lookup_finds_what_reading_every_file_finds(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    path = tmp_path / "held"
    read = []
    real = held_keys.read_files
    monkeypatch.setattr(held_keys, "read_files", lambda table, files, schema: read.extend(files) or real(table, files, schema))
    before: set[str] = set()
    removals = 0
    for seq in range(1, 40):
        event = rng.random()
        if seq > 1 and event < 0.1:
            DeltaTable(str(path)).optimize.compact()  # removes files: the kept rows are read again
        elif seq > 1 and event < 0.15:
            shutil.rmtree(path)  # another table at the same path (another id)
        _append(path, rng, seq)
        keys = pa.table({"k": [f"k{rng.randrange(35)}" for _ in range(rng.randrange(1, 10))]})
        read.clear()
        log = TableLog.open(str(path))
        got = held_keys.current_rows(log, SCHEMA, keys, limit=1_000)
        assert _newest(got) == _newest(_every_file(path, keys)), f"seed {seed}, seq {seq}"
        now = {a.path for a in log.add_files()}
        if before <= now:
            assert {f.path for f in read} == now - before, "after appends only their files are read"
        else:
            assert {f.path for f in read} == now, "a removed file or another table: every file is read"
            removals += 1
        before = now
    assert removals, "each seed compacts or makes the table again at least once"


def test_past_the_limit_nothing_is_kept_and_the_lookup_is_still_right(tmp_path):
    rng = random.Random(7)
    path = tmp_path / "held"
    for seq in range(1, 6):
        _append(path, rng, seq)
    keys = pa.table({"k": [f"k{i}" for i in range(30)]})
    got = held_keys.current_rows(TableLog.open(str(path)), SCHEMA, keys, limit=3)
    assert _newest(got) == _newest(_every_file(path, keys))
    assert held_keys._kept == {}


def test_newest_per_key_groups_keys_as_spark_does():
    """NaN of any bits is one key, -0.0 is 0.0; a move's row outranks its removal."""
    other_nan = struct.unpack("d", struct.pack("Q", 0x7FF8000000000001))[0]
    rows = pa.table({"k": [float("nan"), other_nan, -0.0, 0.0, 1.0, 1.0],
                     C.SEQ: [1, 2, 3, 1, 4, 4], C.REMOVED: [False, False, False, False, True, False],
                     "n": [1, 2, 3, 4, 5, 6]})
    assert sorted(held_keys.newest_per_key(rows, ["k"]).column("n").to_pylist()) == [2, 3, 6]
