"""Add actions from Parquet footers (`engine.delta.parquet_files`), checked against deltalake's own. No JVM."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake

from waterline.engine.delta import parquet_files
from waterline.engine.delta.parquet_files import written_files

ROWS = pa.table({
    "id": pa.array([5, None, -3, 7], pa.int64()),
    "n": pa.array([1, 2, None, 4], pa.int32()),
    "small": pa.array([3, -2, 1, 0], pa.int16()),
    "name": ["a", None, "c", "d"],
    "day": pa.array([date(2026, 1, d) for d in (1, 2, 3, 4)]),
    "price": pa.array([Decimal("1.5")] * 4, pa.decimal128(5, 1)),
    "unsigned": pa.array([1, 2, 3, 4], pa.uint32()),
    "nested": pa.array([{"x": 1}] * 4),
    "empty": pa.array([None] * 4, pa.int64()),
})


def test_stats_match_deltalake_for_what_they_bound(tmp_path):
    """Counts and bounds match deltalake's statistics of the same files (a nested column: none)."""
    table = tmp_path / "t"
    write_deltalake(str(table), ROWS.drop_columns(["unsigned"]))
    theirs = json.loads(_log_stats(table))
    path = next(p for p in table.iterdir() if p.suffix == ".parquet")
    ours = json.loads(parquet_files.delta_stats(pq.read_metadata(path)))
    assert ours["numRecords"] == theirs["numRecords"] == 4
    for column, count in ours["nullCount"].items():
        assert theirs["nullCount"][column] == count, column
    assert set(ours["minValues"]) == {"id", "n", "small", "day", "name", "price"}  # not nested, all-null
    for column in ours["minValues"]:
        assert (ours["minValues"][column], ours["maxValues"][column]) == \
               (theirs["minValues"][column], theirs["maxValues"][column]), column


def _log_stats(table) -> str:
    for line in (table / "_delta_log" / "00000000000000000000.json").read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            return action["add"]["stats"]
    raise AssertionError("no add action")


def test_bounds_merge_row_groups_and_a_type_spark_never_writes_leaves_the_file_unbounded(tmp_path):
    path = tmp_path / "f.parquet"
    pq.write_table(ROWS.drop_columns(["unsigned"]), path, row_group_size=3)  # bounds merged over two row groups
    stats = json.loads(parquet_files.delta_stats(pq.read_metadata(path)))
    assert stats["minValues"] == {"id": -3, "n": 1, "small": -2, "day": "2026-01-01", "name": "a", "price": 1.5}
    assert stats["maxValues"] == {"id": 7, "n": 4, "small": 3, "day": "2026-01-04", "name": "d", "price": 1.5}
    assert stats["nullCount"]["id"] == 1 and stats["nullCount"]["empty"] == 4
    assert "nested" not in stats["nullCount"]
    pq.write_table(ROWS, path)  # an unsigned column: no bounds of its, so none of any column
    stats = json.loads(parquet_files.delta_stats(pq.read_metadata(path)))
    assert "minValues" not in stats and "maxValues" not in stats and stats["nullCount"]["id"] == 1


def test_written_files_names_paths_as_delta_does(tmp_path):
    """Hive-escaped partition values are decoded; paths are URL-encoded relative to the table."""
    folder = tmp_path / "table" / "wl-staged" / "tok" / "data" / "p=2026-01-01-08%3A00 x"
    folder.mkdir(parents=True)
    pq.write_table(ROWS, folder / "part-0.parquet")
    (folder.parent / "_SUCCESS").write_text("")
    (folder / ".part-0.parquet.crc").write_text("")
    [f] = written_files(str(tmp_path / "table"), "wl-staged/tok/data", stats=True)
    assert f.path == "wl-staged/tok/data/p=2026-01-01-08%253A00%20x/part-0.parquet"
    assert f.partition_values == {"p": "2026-01-01-08:00 x"}
    assert f.size == (folder / "part-0.parquet").stat().st_size
    assert json.loads(f.stats)["numRecords"] == 4
    assert written_files(str(tmp_path / "table"), "wl-staged/tok/data", stats=False)[0].stats is None


def test_a_footer_longer_than_one_read_is_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(parquet_files, "_TAIL", 64)  # far shorter than this footer
    (tmp_path / "t" / "d").mkdir(parents=True)
    pq.write_table(ROWS, tmp_path / "t" / "d" / "f.parquet")
    [f] = written_files(str(tmp_path / "t"), "d", stats=True)
    assert json.loads(f.stats)["numRecords"] == 4


def test_not_parquet_is_refused(tmp_path):
    (tmp_path / "t" / "d").mkdir(parents=True)
    (tmp_path / "t" / "d" / "f.parquet").write_bytes(b"not a parquet file at all")
    with pytest.raises(ValueError, match="not a Parquet file"):
        written_files(str(tmp_path / "t"), "d", stats=True)


def test_a_stats_column_list_selects_struct_leaves_as_delta_nests_them(tmp_path):
    """With the table's `delta.dataSkippingStatsColumns` (the held table keeps one), exactly the
    listed columns are described, struct leaves nested as Delta writes them; a listed struct
    stands for all its leaves, and names match case-insensitively."""
    rows = pa.table({
        "id": pa.array([5, None, -3], pa.int64()),
        "h": pa.array([{"h1": 1, "h2": -7}, {"h1": 9, "h2": 2}, {"h1": -4, "h2": 0}]),
        "s-t": pa.array([{"inner": {"x": 3}}, None, {"inner": {"x": 8}}]),
        "l": pa.array([[1], [2, 3], None]),
        "name": ["a", "b", None],
    })
    path = tmp_path / "f.parquet"
    pq.write_table(rows, path)
    columns = parquet_files.stats_columns({"delta.dataSkippingStatsColumns": "ID,h.h1, `s-t`.inner, name, l"})
    assert columns == (("ID",), ("h", "h1"), ("s-t", "inner"), ("name",), ("l",))
    stats = json.loads(parquet_files.delta_stats(pq.read_metadata(path), columns))
    assert stats["minValues"] == {"id": -3, "h": {"h1": -4}, "s-t": {"inner": {"x": 3}}, "name": "a"}
    assert stats["maxValues"] == {"id": 5, "h": {"h1": 9}, "s-t": {"inner": {"x": 8}}, "name": "b"}
    # a leaf under a NULL struct is NULL; a list gets no statistics; a string gets its null count
    assert stats["nullCount"] == {"id": 1, "h": {"h1": 0}, "s-t": {"inner": {"x": 1}}, "name": 1}


def test_stats_columns_read_quotes_as_delta_writes_them():
    read = parquet_files.stats_columns
    assert read({}) is None and read({"delta.dataSkippingStatsColumns": " "}) is None
    assert read({"delta.dataSkippingStatsColumns": "`a.b`.c,`x``y`"}) == (("a.b", "c"), ("x`y",))


def test_a_partition_folder_reads_back_as_its_value(tmp_path):
    """`partition_folder` escapes as Spark does, and `written_files` decodes it."""
    value = "2026-01-01-08:00 x/%=y"
    folder = tmp_path / "t" / "d" / parquet_files.partition_folder("_wl_partition", value)
    folder.mkdir(parents=True)
    pq.write_table(ROWS, folder / "part-0.parquet")
    assert folder.name == "_wl_partition=2026-01-01-08%3A00 x%2F%25%3Dy"
    [f] = written_files(str(tmp_path / "t"), "d", stats=False)
    assert f.partition_values == {"_wl_partition": value}


def test_only_the_files_of_committed_task_attempts_are_data(tmp_path):
    """waterline's committer leaves each task attempt's files in an ``attempt_*`` folder and
    marks the attempt that committed; a failed or duplicate attempt's files are not data."""
    data = tmp_path / "table" / "wl-staged" / "tok" / "data" / "p=1"
    for attempt, committed in (("attempt_1_0001_m_000000_0", False), ("attempt_1_0001_m_000000_1", True)):
        (data / attempt).mkdir(parents=True)
        pq.write_table(ROWS, data / attempt / "part-00000-x.snappy.parquet")
        if committed:
            (data / attempt / parquet_files.TASK_COMMITTED).write_text("")
    pq.write_table(ROWS, data / "part-00001-y.snappy.parquet")  # Hadoop's committer: files in place
    files = written_files(str(tmp_path / "table"), "wl-staged/tok/data", stats=False)
    assert [f.path for f in files] == ["wl-staged/tok/data/p=1/attempt_1_0001_m_000000_1/part-00000-x.snappy.parquet",
                                       "wl-staged/tok/data/p=1/part-00001-y.snappy.parquet"]
    assert all(f.partition_values == {"p": "1"} for f in files)


def test_a_partitioned_write_puts_its_partition_folders_inside_the_attempts_folder(tmp_path):
    data = tmp_path / "table" / "wl-staged" / "tok" / "data"
    for attempt, committed in (("attempt_1_0001_m_000000_0", True), ("attempt_1_0001_m_000001_0", False)):
        (data / attempt / "p=2").mkdir(parents=True)
        pq.write_table(ROWS, data / attempt / "p=2" / "part-x.snappy.parquet")
        if committed:
            (data / attempt / parquet_files.TASK_COMMITTED).write_text("")
    [f] = written_files(str(tmp_path / "table"), "wl-staged/tok/data", stats=False)
    assert f.path == "wl-staged/tok/data/attempt_1_0001_m_000000_0/p=2/part-x.snappy.parquet"
    assert f.partition_values == {"p": "2"}
