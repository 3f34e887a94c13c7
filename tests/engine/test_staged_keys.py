"""Duplicate keys among a held append's staged files, found with pyarrow (`engine.ingest.appended_keys`). No JVM."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from waterline.engine.core.keys import MAX_KEYS_IN_ERROR, duplicate_keys_error
from waterline.engine.ingest.appended_keys import duplicate_keys


def _files(folder, *tables) -> str:
    folder.mkdir(parents=True)
    for i, table in enumerate(tables):
        pq.write_table(table, folder / f"part-{i}.parquet")
    (folder / "_SUCCESS").write_text("")  # not a data file
    return str(folder)


def test_duplicates_across_files_are_found_with_their_counts(tmp_path):
    folder = _files(tmp_path / "d",
                    pa.table({"id": [1, 2, 3], "k": ["a", "a", "b"]}),
                    pa.table({"id": [3, 3, 4], "k": ["b", "c", "a"]}))
    assert duplicate_keys(folder, ["id"]) == [((3,), 3)]
    assert sorted(duplicate_keys(folder, ["id", "k"])) == [((3, "b"), 2)]
    assert duplicate_keys(folder, ["k"]) is not None and len(duplicate_keys(folder, ["k"])) == 2
    assert duplicate_keys(str(tmp_path / "nothing"), ["id"]) == []


def test_at_most_one_more_than_the_error_names(tmp_path):
    ids = [i // 2 for i in range(60)]  # 30 keys, each twice
    found = duplicate_keys(_files(tmp_path / "d", pa.table({"id": ids})), ["id"])
    assert len(found) == MAX_KEYS_IN_ERROR + 1
    message = str(duplicate_keys_error("f", "p", ["id"], found))
    assert message.startswith("feed f: partition p: duplicate keys ['id'] in the output: (id=")
    assert message.endswith(" and more; nothing was written") and message.count(") x2") == MAX_KEYS_IN_ERROR


def test_key_columns_beyond_the_bound_or_ungroupable_are_left_to_spark(tmp_path):
    folder = _files(tmp_path / "d", pa.table({"id": list(range(1000)), "s": [{"x": i} for i in range(1000)]}))
    assert duplicate_keys(folder, ["id"], max_bytes=100) is None  # larger than allowed here
    assert duplicate_keys(folder, ["id"]) == []
    assert duplicate_keys(folder, ["s"]) is None  # pyarrow cannot group a struct
