"""Parquet files a stage wrote, as a Delta commit names them: from a listing and their footers. No JVM.

A staged release writes its files with Spark and commits them itself
(`waterline.engine.log.delta_commit`), so the add actions' sizes, partition
values and statistics come from here: one listing of the stage folder and one
ranged read of each file's footer, instead of a Spark pass over the files.

Statistics are exact by construction: the row count, per top-level column the
null count, and min/max only for signed integer columns. Parquet keeps
timestamp, string and decimal bounds in forms Delta writes differently
(truncated, prefixed, rescaled); a bound written wrongly would let a reader skip
a file that holds matching rows, and a column without bounds is never skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.parquet as pq

from waterline.engine.log import storage
from waterline.engine.log.objects import list_tree, read_tail

_TAIL = 64 * 1024  # one read holds the footer of any file a stage writes; longer ones take a second
_MAGIC = b"PAR1"


@dataclass(frozen=True)
class WrittenFile:
    """One data file under a table: ``path`` relative to the table, URL-encoded as Delta writes it."""

    path: str
    partition_values: dict[str, str]
    size: int
    modified_ms: int
    stats: str | None = None


def written_files(table: str, folder: str, *, stats: bool) -> list[WrittenFile]:
    """The Parquet files Spark wrote under ``table``/``folder`` (a Hive-partitioned folder),
    with Delta statistics read from their footers when ``stats``."""
    root = storage.join(table, folder)
    out = []
    for obj in sorted(list_tree(root), key=lambda o: o.relative):
        name = obj.relative.rsplit("/", 1)[-1]
        if not name.endswith(".parquet") or name.startswith((".", "_")):
            continue  # Spark's _SUCCESS and checksum files
        relative = f"{folder.strip('/')}/{obj.relative}"
        out.append(WrittenFile(
            path=quote(relative, safe="/=:@+,;&$!*'()~"),
            partition_values=_partition_values(obj.relative),
            size=obj.size,
            modified_ms=int(obj.modified_s * 1000),
            stats=delta_stats(_footer(storage.join(root, obj.relative), obj.size)) if stats else None,
        ))
    return out


def _partition_values(relative: str) -> dict[str, str]:
    """``a=1/b=x%3Ay/part-0.parquet`` -> {"a": "1", "b": "x:y"} (Spark escapes values as %XX)."""
    values = {}
    for segment in relative.split("/")[:-1]:
        name, sep, value = segment.partition("=")
        if sep:
            values[unquote(name)] = unquote(value)
    return values


def _footer(uri: str, size: int) -> pq.FileMetaData:
    tail = read_tail(uri, size, _TAIL)
    if tail[-4:] != _MAGIC:
        raise ValueError(f"{uri}: not a Parquet file (no footer)")
    needed = int.from_bytes(tail[-8:-4], "little") + 8
    if needed > len(tail):
        tail = read_tail(uri, size, needed)
    return pq.read_metadata(pa.BufferReader(tail))


def delta_stats(meta: pq.FileMetaData) -> str:
    """Delta's ``stats`` JSON for one file: numRecords, nullCount per top-level column, and
    minValues/maxValues of its signed integer columns (see the module's docstring)."""
    flat = {f.name for f in meta.schema.to_arrow_schema() if not pa.types.is_nested(f.type)}
    nulls: dict[str, int] = {}
    mins: dict[str, int] = {}
    maxs: dict[str, int] = {}
    for j in range(meta.num_columns):
        column = meta.schema.column(j)
        if column.path not in flat:
            continue
        chunks = [meta.row_group(g).column(j).statistics for g in range(meta.num_row_groups)]
        if chunks and all(c is not None and c.has_null_count for c in chunks):
            nulls[column.path] = sum(c.null_count for c in chunks)
        if not _exact_integer(column):
            continue
        bounded = [c for c in chunks if c is not None and c.has_min_max]
        # Every row group must have bounds, except those holding only nulls.
        if bounded and all(c in bounded or (c is not None and c.has_null_count and c.null_count == c.num_values)
                           for c in chunks):
            mins[column.path] = min(c.min for c in bounded)
            maxs[column.path] = max(c.max for c in bounded)
    return json.dumps({"numRecords": meta.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls},
                      separators=(",", ":"))


def _exact_integer(column: pq.ColumnSchema) -> bool:
    """A plain signed INT32/INT64 (Spark's byte, short, int and long), not a date, time or decimal."""
    if column.physical_type not in ("INT32", "INT64"):
        return False
    logical = column.logical_type
    if logical.type == "NONE":
        return column.converted_type in ("NONE", "INT_8", "INT_16", "INT_32", "INT_64")
    return logical.type == "INT" and json.loads(logical.to_json()).get("isSigned", False)
