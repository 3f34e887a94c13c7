"""The commit writer owns checkpoints, and the typed actions keep every field a reader needs. No JVM.

Tables are made by `deltalake` (an independent writer) with a checkpoint interval of 2; the
commits under test are `write_commit`'s, and the checkpoint files are looked for on disk.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from waterline.engine.core.state import TierState
from waterline.engine.delta.actions import AddFile, CdcFile, RemoveFile, encode_commit, parse_commit
from waterline.engine.delta.commit import OwedCheckpoints, property_commit, write_commit
from waterline.engine.delta.table_log import TableLog

ROWS = pa.table({"p": ["a", "b"], "id": [1, 2]})


def _table(tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    write_deltalake(path, ROWS, partition_by=["p"], configuration={"delta.checkpointInterval": "2"})
    return path


def _checkpoints(path: str) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in Path(path, "_delta_log").glob("*.checkpoint*.parquet"))


def _commit(path: str, n: int, owed: OwedCheckpoints | None = None) -> int:
    state = TierState(op="release", tier="t", w=1_000, seq=1, n=n, token=f"token{n}")
    return write_commit(TableLog.open(path).snapshot(), property_commit(state), checkpoints=owed)


def test_every_commit_at_the_interval_is_checkpointed_by_the_writer(tmp_path):
    path = _table(tmp_path)
    assert [_commit(path, 1), _checkpoints(path)] == [1, []]
    assert [_commit(path, 2), _checkpoints(path)] == [2, [2]]  # version 2: the interval's
    assert DeltaTable(path).version() == 2


def test_owed_checkpoints_wait_for_the_operations_last_commit(tmp_path):
    path = _table(tmp_path)
    _commit(path, 1)
    owed = OwedCheckpoints()
    assert _commit(path, 2, owed) == 2 and _checkpoints(path) == []  # owed, not written yet
    owed.write()
    assert _checkpoints(path) == [2]


def test_file_actions_keep_tags_deletion_vectors_and_statistics_through_a_round_trip():
    dv = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4, "sizeInBytes": 40,
          "cardinality": 6}
    written = [
        AddFile("a.parquet", {"p": "a"}, 10, 5, stats=json.dumps({"numRecords": 3}), tags={"k": "v"},
                deletion_vector=dv),
        RemoveFile("b.parquet", {"p": "b"}, 11, 6, stats=json.dumps({"numRecords": 1}), deletion_vector=dv),
        CdcFile("c.parquet", {"p": "a"}, 12, tags={"k": "w"}),
    ]
    assert parse_commit(encode_commit(written)) == written
    assert written[0].num_records == 3 and AddFile("x", {}, 1, 1).num_records is None


def test_actions_without_the_new_fields_are_written_as_before():
    plain = [AddFile("a.parquet", {}, 10, 5), RemoveFile("b.parquet", {}, 11, 6), CdcFile("c.parquet", {}, 12)]
    assert encode_commit(plain).decode().splitlines() == [
        '{"add":{"path":"a.parquet","partitionValues":{},"size":10,"modificationTime":5,"dataChange":true}}',
        '{"remove":{"path":"b.parquet","dataChange":true,"deletionTimestamp":6,"extendedFileMetadata":true,'
        '"partitionValues":{},"size":11}}',
        '{"cdc":{"path":"c.parquet","partitionValues":{},"size":12,"dataChange":false}}',
    ]


def test_a_snapshots_add_files_are_typed(tmp_path):
    path = _table(tmp_path)
    adds = sorted(TableLog.open(path).add_files(), key=lambda a: a.partition_values["p"])
    assert [(a.partition_values, a.num_records, a.data_change) for a in adds] == [
        ({"p": "a"}, 1, True), ({"p": "b"}, 1, True)]
    assert all(Path(path, a.path).stat().st_size == a.size for a in adds)
