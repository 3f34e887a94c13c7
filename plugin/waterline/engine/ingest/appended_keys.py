"""Duplicate keys among the Parquet files a held append wrote, found without a JVM.

An ingest of a new partition checks its keys in the files its write left,
before it commits them. A Spark job for that costs 0.15-0.3 s at 100k rows
(a shuffle, two jobs, the files read again through Spark's file system),
most of a small ingest's time beyond its write; reading the key columns with
pyarrow and grouping them costs 30 ms at 100k rows and 90 ms at 1M. Key
columns larger than a bound (their Parquet size, from the footers) are left to
Spark, so a huge partition never lands in this process's memory.
"""

from __future__ import annotations

from typing import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from waterline.engine.core.keys import MAX_KEYS_IN_ERROR
from waterline.engine.delta import storage
from waterline.engine.delta.parquet_files import data_files

#: Key columns up to this many bytes (uncompressed, as the footers tell) are checked here.
MAX_KEY_BYTES = 256 * 2**20


def duplicate_keys(folder: str, key: Sequence[str], *,
                   max_bytes: int = MAX_KEY_BYTES) -> list[tuple[tuple, int]] | None:
    """Key values that occur more than once among the data files under ``folder`` (a local
    folder or an S3 URI; `data_files`), with their counts, at most `MAX_KEYS_IN_ERROR` + 1 of them; None
    when this process should not check them (the key columns are larger than ``max_bytes``,
    or pyarrow cannot group their type): Spark must."""
    fs, root = storage.arrow_filesystem(folder)
    files = [pq.ParquetFile(f"{root.rstrip('/')}/{obj.relative}", filesystem=fs) for obj in data_files(folder)]
    size = sum(_column_bytes(f.metadata, key) for f in files)
    if size > max_bytes:
        return None
    try:
        keys = pa.concat_tables([f.read(columns=list(key)) for f in files]) if files else None
        if keys is None or keys.num_rows == 0:
            return []
        counts = keys.group_by(list(key)).aggregate([([], "count_all")])
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid):
        return None
    found = counts.filter(pc.greater(counts["count_all"], 1)).slice(0, MAX_KEYS_IN_ERROR + 1).to_pylist()
    return [(tuple(row[k] for k in key), row["count_all"]) for row in found]


def _column_bytes(meta: pq.FileMetaData, key: Sequence[str]) -> int:
    wanted = set(key)
    return sum(meta.row_group(g).column(j).total_uncompressed_size
               for g in range(meta.num_row_groups) for j in range(meta.num_columns)
               if meta.schema.column(j).path.split(".")[0] in wanted)
