"""Files a small release reads and writes on the driver (`waterline.engine.delta.arrow_files`):
written in the layout waterline's commit reads as committed, read back with partition
values, missing columns and file names as Spark gives them. No JVM."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from waterline.engine.delta.arrow_files import DataFile, read_files, read_matching, write_partitioned
from waterline.engine.delta.parquet_files import data_files, written_files
from waterline.errors import WaterlineError

HASH = pa.struct([pa.field("h1", pa.int64()), pa.field("h2", pa.int64())])
SCHEMA = pa.schema([("id", pa.string()), ("n", pa.int64()), ("h", HASH), ("ts", pa.timestamp("us", tz="UTC")),
                    ("p", pa.string())])
ODD = "2026-01-05 a:b%c/d"  # a partition value Spark escapes in its folder's name


def _rows() -> pa.Table:
    return pa.table({
        "id": ["a", "b", "c", "a"],
        "n": [1, 2, 3, 4],
        "h": pa.array([{"h1": 1, "h2": 2}, None, {"h1": 5, "h2": 6}, {"h1": 7, "h2": 8}], HASH),
        "ts": pa.array([0, 1_000_000, 2_000_000, 3_000_000], pa.timestamp("us", tz="UTC")),
        "p": ["2026-01-05", "2026-01-05", ODD, ODD],
    }, schema=SCHEMA)


def _written(tmp_path) -> tuple[str, list[DataFile]]:
    table = str(tmp_path / "t")
    assert write_partitioned(_rows(), f"{table}/_stage/x/data", partition_by="p") == 2
    files = written_files(table, "_stage/x/data", stats=True)
    return table, [DataFile(f.path, f.partition_values) for f in files]


def test_written_files_are_committed_partitioned_and_carry_statistics(tmp_path):
    table, files = _written(tmp_path)
    assert sorted(f.partition_values["p"] for f in files) == ["2026-01-05", ODD]
    for f in written_files(table, "_stage/x/data", stats=True):
        assert '"numRecords":2' in f.stats and '"ts"' in f.stats
        assert "p" not in pq.read_schema(DataFile(f.path, {}).uri(table)).names  # in the folder's name, as Spark
    assert len(data_files(f"{table}/_stage/x/data")) == 2


def test_files_without_their_commit_marker_are_not_data(tmp_path):
    root = tmp_path / "t" / "_stage" / "y" / "data"
    write_partitioned(_rows(), str(root), partition_by="p")
    (marker,) = root.glob("attempt_*/task-committed")
    marker.unlink()  # a writer killed before its marker: its files are never committed
    assert data_files(str(root)) == []


def test_read_back_with_partition_values_file_names_and_missing_columns(tmp_path):
    table, files = _written(tmp_path)
    wider = SCHEMA.append(pa.field("added_later", pa.float64()))
    got = read_files(table, files, wider, file_column="_file")
    assert sorted(zip(got["id"].to_pylist(), got["n"].to_pylist(), got["p"].to_pylist())) == sorted(
        zip(_rows()["id"].to_pylist(), _rows()["n"].to_pylist(), _rows()["p"].to_pylist()))
    assert got["added_later"].null_count == got.num_rows
    assert got["h"].to_pylist().count(None) == 1
    assert all(os.path.exists(path) for path in got["_file"].to_pylist())
    assert read_files(table, [], wider).num_rows == 0


def test_read_matching_keeps_the_rows_of_the_keys_asked_with_every_column(tmp_path):
    table, files = _written(tmp_path)
    keys = pa.table({"id": ["a", "a", "c", "zz"], "p": [ODD, ODD, ODD, ODD]})  # repeated and absent keys
    got = read_matching(table, files, SCHEMA, keys)
    assert sorted(zip(got["id"].to_pylist(), got["n"].to_pylist())) == [("a", 4), ("c", 3)]
    assert sorted(r["h1"] for r in got["h"].to_pylist()) == [5, 7]
    assert read_matching(table, files, SCHEMA, pa.table({"id": pa.array([], pa.string())})).num_rows == 0


def test_read_matching_finds_float_keys_as_sparks_join_does(tmp_path):
    table = str(tmp_path / "f")
    rows = pa.table({"k": [-0.0, float("nan"), 1.5], "n": [1, 2, 3], "p": ["x", "x", "x"]})
    write_partitioned(rows, f"{table}/_stage/z/data", partition_by="p")
    files = [DataFile(f.path, f.partition_values) for f in written_files(table, "_stage/z/data", stats=False)]
    schema = pa.schema([("k", pa.float64()), ("n", pa.int64()), ("p", pa.string())])
    got = read_matching(table, files, schema, pa.table({"k": [0.0, float("nan")]}))  # 0.0 = -0.0, NaN = NaN
    assert sorted(got["n"].to_pylist()) == [1, 2]


def test_a_row_without_a_partition_value_is_refused(tmp_path):
    rows = _rows().set_column(4, "p", pa.array([None, "x", "x", "x"], pa.string()))
    with pytest.raises(ValueError, match="without a value of the partition column p"):
        write_partitioned(rows, str(tmp_path / "t"), partition_by="p")


@pytest.mark.parametrize("text, error", [("lots", "not a whole number"), ("-1", "a number of rows cannot be negative")])
def test_a_bad_local_rows_setting_is_one_line_naming_it(monkeypatch, text, error):
    from waterline.engine.spark.local_frames import DEFAULT_LOCAL_ROWS, LOCAL_ROWS_ENV, local_rows

    monkeypatch.setenv(LOCAL_ROWS_ENV, text)
    with pytest.raises(WaterlineError, match=f"{LOCAL_ROWS_ENV}='{text}': {error}"):
        local_rows()
    monkeypatch.setenv(LOCAL_ROWS_ENV, " ")
    assert local_rows() == DEFAULT_LOCAL_ROWS


def test_a_stream_batch_is_collected_up_to_its_own_cap_and_the_setting(monkeypatch):
    from waterline.engine.spark.local_frames import BATCH_ROWS_CAP, LOCAL_ROWS_ENV, batch_fits, batch_rows, fits

    monkeypatch.delenv(LOCAL_ROWS_ENV, raising=False)
    assert batch_rows() == BATCH_ROWS_CAP < 1_000_000  # a release reads more on the driver than a batch collects
    assert fits(1_000_000) and not batch_fits(BATCH_ROWS_CAP + 1) and batch_fits(BATCH_ROWS_CAP)
    monkeypatch.setenv(LOCAL_ROWS_ENV, "300")
    assert (batch_rows(), batch_fits(300), batch_fits(301), fits(301)) == (300, True, False, False)
    monkeypatch.setenv(LOCAL_ROWS_ENV, "0")
    assert not batch_fits(0) and not fits(0)
