"""waterline's commit writer against other writers of the same table, and against itself. No JVM.

Tables are made and changed by `deltalake` (delta-rs: an independent writer); the
commits under test are `waterline.engine.delta.commit.write_commit`'s. After each
case the table is read back by deltalake: every file its snapshots name exists,
and rows are exactly what the commits that landed say.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, TableFeatures, write_deltalake

from waterline.engine.core.races import SkippedCommit
from waterline.engine.core.state import TierState
from waterline.engine.delta.actions import RemoveFile, parse_commit
from waterline.engine.delta.commit import FileActions, property_commit, tier_commit, write_commit
from waterline.engine.delta.objects import create_if_absent
from waterline.engine.delta.parquet_files import written_files
from waterline.engine.delta.rebase import CommitConflict
from waterline.engine.delta.table_log import APP_COMMIT, PROPERTY, TableLog, commit_path

ROWS = pa.table({"p": ["a", "a", "b"], "id": [1, 2, 3], "v": ["x", "y", "z"]})


@pytest.fixture
def table(tmp_path) -> str:
    path = str(tmp_path / "t")
    write_deltalake(path, ROWS, partition_by=["p"])
    return path


def _staged(path: str, token: str, rows: pa.Table, partition: str) -> FileActions:
    """One Parquet file written under the table's stage folder, as the add action naming it."""
    folder = Path(path, "wl-staged", token, "data", f"p={partition}")
    folder.mkdir(parents=True)
    pq.write_table(rows.drop(["p"]), folder / "part-0.parquet")
    files = written_files(path, f"wl-staged/{token}/data", stats=True)
    return FileActions(adds=tuple(f.add_action() for f in files))


def _state(n: int, w: int = 1_000) -> TierState:
    return TierState(op="release", tier="t", w=w, seq=1, n=n, token=f"token{n}")


def _rows(path: str) -> list[tuple]:
    table = DeltaTable(path).to_pyarrow_table()
    return sorted(zip(table["p"].to_pylist(), table["id"].to_pylist(), table["v"].to_pylist()))


def _every_snapshot_readable(path: str) -> None:
    latest = DeltaTable(path).version()
    for version in range(latest + 1):
        for uri in DeltaTable(path, version=version).file_uris():
            assert Path(uri.removeprefix("file://")).exists(), f"version {version} names a missing file {uri}"


def test_a_commit_lands_once_and_reads_back(table):
    base = TableLog.open(table).snapshot()
    files = _staged(table, "s1", pa.table({"p": ["c"], "id": [4], "v": ["w"]}), "c")
    version = write_commit(base, tier_commit(files, _state(1), app=APP_COMMIT))
    assert version == base.version + 1
    assert _rows(table)[-1] == ("c", 4, "w")
    log = TableLog.open(table)
    assert log.transaction_version(APP_COMMIT) == 1 and json.loads(log.configuration[PROPERTY])["n"] == 1
    with pytest.raises(SkippedCommit, match="already applied"):  # a replay of the same commit number
        write_commit(log.snapshot(), tier_commit(FileActions(), _state(1), app=APP_COMMIT))
    _every_snapshot_readable(table)


def test_a_create_answered_already_there_with_our_own_bytes_is_a_success(tmp_path):
    """What a retried PUT meets when its first try landed: the object holds our bytes."""
    uri = str(tmp_path / "_delta_log" / "00000000000000000001.json")
    assert create_if_absent(uri, b"ours") is True
    assert create_if_absent(uri, b"ours") is True  # the retry: the same bytes are there, so it is ours
    assert create_if_absent(uri, b"theirs") is False  # another writer's bytes: a lost race
    assert Path(uri).read_bytes() == b"ours"


def test_a_property_change_taken_first_is_committed_after_and_kept(table):
    base = TableLog.open(table).snapshot()
    DeltaTable(table).alter.set_table_properties({"delta.logRetentionDuration": "interval 2 days"})
    files = _staged(table, "s1", pa.table({"p": ["c"], "id": [4], "v": ["w"]}), "c")
    version = write_commit(base, tier_commit(files, _state(1), app=APP_COMMIT))
    assert version == base.version + 2
    log = TableLog.open(table)
    assert log.configuration["delta.logRetentionDuration"] == "interval 2 days"  # the user's property stays
    assert json.loads(log.configuration[PROPERTY])["n"] == 1  # and ours is there
    assert ("c", 4, "w") in _rows(table)
    _every_snapshot_readable(table)


def test_a_compaction_taken_first_is_committed_after_unless_it_removed_our_files(table):
    write_deltalake(table, pa.table({"p": ["a"], "id": [5], "v": ["q"]}), mode="append")
    log = TableLog.open(table)
    base = log.snapshot()
    in_a = [a for a in log.add_files() if a.partition_values["p"] == "a"]
    assert len(in_a) == 2
    DeltaTable(table).optimize.compact()  # rows kept, files of partition a rewritten
    committed = parse_commit(Path(commit_path(table, base.version + 1)).read_bytes())
    assert all(not getattr(a, "data_change", False) for a in committed if hasattr(a, "data_change"))
    adding = _staged(table, "s1", pa.table({"p": ["c"], "id": [6], "v": ["n"]}), "c")
    version = write_commit(base, tier_commit(adding, _state(1), app=APP_COMMIT))
    assert version == base.version + 2  # its files untouched by the compaction: after it
    removing = FileActions(removes=(RemoveFile(in_a[0].path, in_a[0].partition_values, in_a[0].size),))
    before = TableLog.open(table).version
    with pytest.raises(CommitConflict, match="which this commit rewrites"):
        write_commit(base, tier_commit(removing, _state(2), app=APP_COMMIT))
    assert TableLog.open(table).version == before  # nothing written
    assert _rows(table) == sorted([("a", 1, "x"), ("a", 2, "y"), ("b", 3, "z"), ("a", 5, "q"), ("c", 6, "n")])
    _every_snapshot_readable(table)


def test_a_row_change_taken_first_is_a_conflict(table):
    base = TableLog.open(table).snapshot()
    write_deltalake(table, pa.table({"p": ["b"], "id": [7], "v": ["r"]}), mode="append")
    files = _staged(table, "s1", pa.table({"p": ["c"], "id": [4], "v": ["w"]}), "c")
    with pytest.raises(CommitConflict, match="rows added"):
        write_commit(base, tier_commit(files, _state(1), app=APP_COMMIT))
    assert ("c", 4, "w") not in _rows(table)


def test_another_waterline_commit_taken_first_is_a_conflict(table):
    base = TableLog.open(table).snapshot()
    write_commit(base, property_commit(_state(1)))  # a second waterline writer made base + 1
    with pytest.raises(CommitConflict, match="waterline"):
        write_commit(base, property_commit(_state(1, w=2_000)))
    assert json.loads(TableLog.open(table).configuration[PROPERTY])["w"] == 1_000


def test_a_protocol_upgrade_taken_first_is_a_conflict(table):
    base = TableLog.open(table).snapshot()
    DeltaTable(table).alter.add_feature(TableFeatures.DeletionVectors, allow_protocol_versions_increase=True)
    with pytest.raises(CommitConflict, match="protocol changed"):
        write_commit(base, property_commit(_state(1)))
