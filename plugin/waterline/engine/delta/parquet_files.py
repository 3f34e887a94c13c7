"""Parquet files a stage wrote, as a Delta commit names them: from a listing and their footers. No JVM.

A staged release writes its files with Spark and commits them itself
(`waterline.engine.delta.commit`), so the add actions' sizes, partition
values and statistics come from here: one listing of the stage folder and one
ranged read of each file's footer, instead of a Spark pass over the files.

Statistics are safe by construction: the row count, per column the null
count, and min/max for signed integer columns (exact), dates (exact) and
timestamps (at Delta's millisecond precision, the lower bound floored and the
upper one ceiled), so consumers skip tier files on ``event_time``. String and
decimal bounds are not written: Parquet keeps them in forms Delta writes
differently (truncated, prefixed, rescaled); a bound written wrongly would let
a reader skip a file that holds matching rows, and a column without bounds is
never skipped. The
columns are the table's ``delta.dataSkippingStatsColumns`` when it lists them
(struct leaves included, as the held table's list has them), else every
top-level column.

The writes waterline commits itself (held appends, staged releases) use its own
output committer (``jvm/src/dev/waterline/spark/AttemptFolderCommitter.java``):
each task attempt writes into its own ``attempt_*`` folder and marks its commit
with an empty file, and only marked attempts' files are data (`data_files`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Iterator, Mapping, Sequence
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.parquet as pq

from waterline.engine.delta import storage
from waterline.engine.delta.actions import AddFile, CdcFile
from waterline.engine.delta.objects import StoredObject, list_tree, read_tail

#: The table property that names the columns Delta keeps statistics for.
STATS_COLUMNS = "delta.dataSkippingStatsColumns"
#: What `AttemptFolderCommitter` names a task attempt's folder (a prefix) and its commit marker.
ATTEMPT_PREFIX = "attempt_"
TASK_COMMITTED = "task-committed"
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

    def add_action(self) -> AddFile:
        """The file as a Delta ``add`` action (data that changes the table)."""
        return AddFile(path=self.path, partition_values=self.partition_values, size=self.size,
                       modification_time=self.modified_ms, data_change=True, stats=self.stats)

    def cdc_action(self) -> CdcFile:
        """The file as a Delta ``cdc`` action (change rows of the commit)."""
        return CdcFile(path=self.path, partition_values=self.partition_values, size=self.size)


Path = tuple[str, ...]  # a column: its name, or a struct leaf's names from the top


def written_files(table: str, folder: str, *, stats: bool,
                  columns: Sequence[Path] | None = None) -> list[WrittenFile]:
    """The Parquet files Spark wrote under ``table``/``folder`` (a Hive-partitioned folder),
    with Delta statistics read from their footers when ``stats`` (of ``columns``, see
    `delta_stats`)."""
    root = storage.join(table, folder)
    out = []
    for obj in data_files(root):
        relative = f"{folder.strip('/')}/{obj.relative}"
        out.append(WrittenFile(
            path=quote(relative, safe="/=:@+,;&$!*'()~"),
            partition_values=_partition_values(obj.relative),
            size=obj.size,
            modified_ms=int(obj.modified_s * 1000),
            stats=delta_stats(_footer(storage.join(root, obj.relative), obj.size), columns) if stats else None,
        ))
    return out


def data_files(root: str) -> list[StoredObject]:
    """The Parquet files a Spark write left under the folder ``root``, in path order: not
    Spark's ``_SUCCESS`` and checksum files, and, under a task attempt's folder
    (`AttemptFolderCommitter`; a partitioned write puts the partition folders inside it),
    only when that attempt committed: a failed or killed attempt's files are never data."""
    listed = list_tree(root)
    committed = {parent for parent, _, name in (o.relative.rpartition("/") for o in listed) if name == TASK_COMMITTED}
    out = []
    for obj in listed:
        folders = obj.relative.split("/")
        name = folders.pop()
        if not name.endswith(".parquet") or name.startswith((".", "_")):
            continue
        attempt = next((i for i, f in enumerate(folders) if f.startswith(ATTEMPT_PREFIX)), None)
        if attempt is not None and "/".join(folders[:attempt + 1]) not in committed:
            continue
        out.append(obj)
    return sorted(out, key=lambda o: o.relative)


# What Spark escapes in a partition folder's name (ExternalCatalogUtils.escapePathName).
_ESCAPED = frozenset('"#%\'*/:=?\\\x7f{[]^') | frozenset(chr(c) for c in range(1, 32))


def partition_folder(column: str, value: str) -> str:
    """``column=value`` as Spark names a partition's folder (``%XX`` escapes), which
    `written_files` reads back as the file's partition value."""
    def escape(text: str) -> str:
        return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in text)

    return f"{escape(column)}={escape(value)}"


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


def stats_columns(configuration: Mapping[str, str]) -> tuple[Path, ...] | None:
    """The columns a table's ``delta.dataSkippingStatsColumns`` names (None: it names none).

    Commas separate columns, dots struct levels, backquotes quote (a doubled one is
    a backquote): ``a.b, `c.d`.e`` gives ``("a", "b"), ("c.d", "e")``."""
    text = configuration.get(STATS_COLUMNS, "")
    columns: list[Path] = []
    levels: list[str] = []
    name: list[str] = []
    quoted = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "`" and quoted and text.startswith("``", i):
            name.append("`")
            i += 1
        elif ch == "`":
            quoted = not quoted
        elif quoted or ch not in ".," and not ch.isspace():
            name.append(ch)
        elif ch in ".,":
            levels.append("".join(name))
            name = []
            if ch == ",":
                columns.append(tuple(levels))
                levels = []
        i += 1
    levels.append("".join(name))
    columns.append(tuple(levels))
    found = tuple(c for c in columns if any(c))
    return found or None


def delta_stats(meta: pq.FileMetaData, columns: Sequence[Path] | None = None) -> str:
    """Delta's ``stats`` JSON for one file: numRecords, and per column the nullCount and,
    for signed integer columns, minValues/maxValues (see the module's docstring).

    ``columns``: the columns (or structs: all their leaves) to describe, as
    `stats_columns` gives them; None: every top-level column that is not nested."""
    wanted = None if columns is None else [tuple(p.lower() for p in c) for c in columns]
    nulls: dict = {}
    mins: dict = {}
    maxs: dict = {}
    for j, path in enumerate(_leaf_paths(meta)):
        if path is None or not _selected(path, wanted):
            continue
        column = meta.schema.column(j)
        chunks = [meta.row_group(g).column(j).statistics for g in range(meta.num_row_groups)]
        if chunks and all(c is not None and c.has_null_count for c in chunks):
            _put(nulls, path, sum(c.null_count for c in chunks))
        bound = _bounds_of(column)
        if bound is None:
            continue
        bounded = [c for c in chunks if c is not None and c.has_min_max]
        # Every row group must have bounds, except those holding only nulls.
        if bounded and all(c in bounded or (c is not None and c.has_null_count and c.null_count == c.num_values)
                           for c in chunks):
            _put(mins, path, bound(min(c.min_raw for c in bounded), False))
            _put(maxs, path, bound(max(c.max_raw for c in bounded), True))
    return json.dumps({"numRecords": meta.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls},
                      separators=(",", ":"))


def _selected(path: Path, wanted: list[Path] | None) -> bool:
    if wanted is None:
        return len(path) == 1
    lowered = tuple(p.lower() for p in path)  # Delta matches column names case-insensitively
    return any(lowered[:len(w)] == w for w in wanted)


def _put(into: dict, path: Path, value: int) -> None:
    for name in path[:-1]:
        into = into.setdefault(name, {})
    into[path[-1]] = value


def _leaf_paths(meta: pq.FileMetaData) -> list[Path | None]:
    """Per Parquet column of the file, in order, its path through structs; None for a
    column inside a list or map (Delta keeps no statistics there)."""

    def walk(field: pa.Field, path: Path, repeated: bool) -> Iterator[Path | None]:
        kind = field.type
        if pa.types.is_struct(kind):
            for i in range(kind.num_fields):
                yield from walk(kind.field(i), (*path, kind.field(i).name), repeated)
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
            yield from walk(kind.value_field, path, True)
        elif pa.types.is_map(kind):
            yield from walk(kind.key_field, path, True)
            yield from walk(kind.item_field, path, True)
        else:
            yield None if repeated else path

    paths = [p for f in meta.schema.to_arrow_schema() for p in walk(f, (f.name,), False)]
    # A schema pyarrow maps differently from its Parquet columns: describe nothing rather than guess.
    return paths if len(paths) == meta.num_columns else [None] * meta.num_columns


def _exact_integer(column: pq.ColumnSchema) -> bool:
    """A plain signed INT32/INT64 (Spark's byte, short, int and long), not a date, time or decimal."""
    if column.physical_type not in ("INT32", "INT64"):
        return False
    logical = column.logical_type
    if logical.type == "NONE":
        return column.converted_type in ("NONE", "INT_8", "INT_16", "INT_32", "INT_64")
    return logical.type == "INT" and json.loads(logical.to_json()).get("isSigned", False)


_EPOCH_DATE = date(1970, 1, 1)
_PER_MS = {"milliseconds": 1, "microseconds": 1_000, "nanoseconds": 1_000_000}


def _bounds_of(column: pq.ColumnSchema):
    """How to write a column's raw Parquet bound as a Delta statistic, ``bound(raw, upper)``, or
    None for a column whose bounds are not written (see the module's docstring).

    Integers exactly; dates as ``yyyy-MM-dd``; timestamps at Delta's millisecond precision,
    the lower bound rounded down and the upper one up, so a reader that compares with
    them never skips a file holding a matching row (Delta truncates both; a reader that
    trusts a truncated upper bound would skip rows in its last millisecond)."""
    if _exact_integer(column):
        return lambda raw, upper: raw
    logical = column.logical_type
    if column.physical_type == "INT32" and (logical.type == "DATE" or column.converted_type == "DATE"):
        return lambda raw, upper: (_EPOCH_DATE + timedelta(days=raw)).isoformat()
    if column.physical_type != "INT64":
        return None
    if logical.type == "TIMESTAMP":
        spec = json.loads(logical.to_json())
        unit, utc = spec.get("timeUnit"), bool(spec.get("isAdjustedToUTC"))
    elif column.converted_type in ("TIMESTAMP_MILLIS", "TIMESTAMP_MICROS"):
        unit, utc = ("milliseconds" if column.converted_type == "TIMESTAMP_MILLIS" else "microseconds"), True
    else:
        return None
    per_ms = _PER_MS.get(unit)
    if per_ms is None:
        return None
    return lambda raw, upper: _timestamp_text(-(-raw // per_ms) if upper else raw // per_ms, utc)


def _timestamp_text(ms: int, utc: bool) -> str:
    """Milliseconds since the epoch as Delta writes a timestamp statistic (``Z`` for a
    TIMESTAMP, none for a TIMESTAMP_NTZ)."""
    moment = datetime(1970, 1, 1) + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}" + ("Z" if utc else "")
