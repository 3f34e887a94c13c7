"""Delta's per-file statistics (``stats`` of an add action) from a Parquet footer. No JVM.

Readers skip a file when its statistics say no row can match a filter, so a bound
written narrower than the data silently drops rows. What is written, per column
(docs/decisions.md "File statistics every reader can trust"):

* ``nullCount`` for every described column; ``numRecords`` for the file.
* ``minValues``/``maxValues`` in the form Spark's Delta writer gives them: integers
  exactly; booleans; dates ``yyyy-MM-dd``; timestamps at millisecond precision, the
  lower bound floored and the upper one ceiled (``Z`` for a TIMESTAMP, none for a
  TIMESTAMP_NTZ), years zero-padded to four digits; decimals as JSON numbers at their
  scale; doubles and floats (``Infinity``/``-Infinity`` as strings, a zero lower bound
  as ``-0.0``); strings cut to their first 32 code points, the upper bound then followed
  by a tie-breaker character above the one cut off (``\\x7f`` or U+10FFFF, as Spark does),
  so it stays above every value. Binary and list/map columns get no bounds (Spark writes
  none, and no reader needs them).
* A file with a column whose bounds cannot be written safely gets no ``minValues`` and no
  ``maxValues`` at all: deltalake skips a file on a column missing from a present
  ``minValues``, while a file without them is read by every reader. The cases: a float
  column holding NaN (Spark orders NaN above every number and writes ``"NaN"`` as the
  bound, which deltalake then compares as no number and skips the file), or one whose
  writer does not say whether it holds NaN (Arrow's writer leaves NaN out of the footer's
  bounds; `write_parquet` records the float columns Arrow writes that hold none, and keeps
  no Parquet statistics of one that holds NaN, which DuckDB would skip a row group by); a timestamp
  or date outside ``0001-01-01``..``9999-12-31 23:59:59.999`` once rounded outwards (the
  ``9999-12-31 23:59:59.999999`` sentinel: a wider upper bound has no text); a string
  column whose footer has no bounds (Spark's and Arrow's writers leave out values over
  4 KB) or bounds that are not UTF-8; a type Spark never writes (unsigned integers,
  INT96); a row group without bounds that holds values.

Footer bounds are exact for what is written: Parquet orders strings by unsigned bytes,
which for UTF-8 is code point order (the order of every reader's string comparison),
decimals by their signed value, and Spark's writer (parquet-mr) orders doubles as
``Double.compare`` does (NaN last, -0.0 before 0.0).
"""

from __future__ import annotations

import io
import json
import math
import uuid
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

Path = tuple[str, ...]  # a column: its name, or a struct leaf's names from the top

#: Footer metadata `annotate` writes: the float leaves (JSON lists of names) holding no NaN.
NAN_FREE_KEY = b"waterline.nan_free"
#: How many code points of a string Spark's Delta writer keeps in a bound.
STRING_PREFIX = 32
_MAX_CHAR = "\U0010ffff"
_ASCII_MAX = "\x7f"


class Unbounded(Exception):
    """A column holds values whose bounds cannot be written safely (see the module's docstring)."""


def annotate(rows: pa.Table) -> pa.Table:
    """``rows`` with `NAN_FREE_KEY` in its schema's metadata (written into the Parquet footer
    by Arrow), naming its float leaves that hold no NaN, so `delta_stats` may trust the
    footer's bounds of those (Arrow leaves NaN out of them)."""
    free = [list(path) for path, column in _float_leaves(rows) if not pc.any(pc.is_nan(column)).as_py()]
    metadata = dict(rows.schema.metadata or {})
    metadata[NAN_FREE_KEY] = json.dumps(free).encode()
    return rows.replace_schema_metadata(metadata)


def write_parquet(rows: pa.Table, where: Any, **options: Any) -> None:
    """``rows`` written as one Parquet file by Arrow (``where``, ``options``: those of
    ``pq.write_table``), annotated (`annotate`), a float column holding NaN without Parquet
    statistics: Arrow's footer bounds leave NaN out, and a reader that skips row groups by
    them (DuckDB) while ordering NaN above every number would skip a NaN row."""
    noted = annotate(rows)
    free = {tuple(p) for p in json.loads(noted.schema.metadata[NAN_FREE_KEY])}
    with_nan = {".".join(path) for path, _ in _float_leaves(rows) if path not in free}
    written: bool | list[str] = True
    if with_nan:  # the file's leaf columns, as Parquet names them, but those
        empty = io.BytesIO()
        pq.write_table(rows.schema.empty_table(), empty)
        leaves = pq.read_metadata(pa.BufferReader(empty.getvalue())).schema
        written = [leaves.column(j).path for j in range(len(leaves)) if leaves.column(j).path not in with_nan]
    pq.write_table(noted, where, write_statistics=written, **options)


def _float_leaves(rows: pa.Table) -> Iterator[tuple[Path, pa.ChunkedArray]]:
    def walk(path: Path, column: pa.ChunkedArray) -> Iterator[tuple[Path, pa.ChunkedArray]]:
        kind = column.type
        if pa.types.is_floating(kind):
            yield path, column
        elif pa.types.is_struct(kind):
            for i in range(kind.num_fields):
                yield from walk((*path, kind.field(i).name), pc.struct_field(column, [i]))

    for name, column in zip(rows.column_names, rows.columns):
        yield from walk((name,), column)


def delta_stats(meta: pq.FileMetaData, columns: Sequence[Path] | None = None) -> str:
    """Delta's ``stats`` JSON for one file (see the module's docstring).

    ``columns``: the columns (or structs: all their leaves) to describe, as
    `parquet_files.stats_columns` gives them; None: every top-level column that is not nested."""
    wanted = None if columns is None else [tuple(p.lower() for p in c) for c in columns]
    nan_free = _nan_free(meta)
    nulls: dict = {}
    mins: dict = {}
    maxs: dict = {}
    bounded = True
    for j, path in enumerate(_leaf_paths(meta)):
        if path is None or not _selected(path, wanted):
            continue
        chunks = [meta.row_group(g).column(j).statistics for g in range(meta.num_row_groups)]
        if chunks and all(c is not None and c.has_null_count for c in chunks):
            _put(nulls, path, sum(c.null_count for c in chunks))
        try:
            found = _column_bounds(meta.schema.column(j), chunks, path in nan_free)
        except (Unbounded, ValueError, OverflowError, TypeError):  # never a bound it cannot stand by
            bounded = False
            continue
        if found is not None:
            _put(mins, path, found[0])
            _put(maxs, path, found[1])
    stats: dict[str, Any] = {"numRecords": meta.num_rows}
    if bounded:
        stats.update(minValues=mins, maxValues=maxs)
    stats["nullCount"] = nulls
    return _json(stats)


def _json(stats: dict) -> str:
    """``stats`` as JSON, decimals as numbers with all their digits (json writes no Decimal)."""
    token = uuid.uuid4().hex
    numbers: list[str] = []

    def encode(value: Any) -> Any:
        if isinstance(value, Decimal):
            numbers.append(format(value, "f"))
            return f"{token}{len(numbers) - 1}"
        raise TypeError(f"{type(value).__name__} in statistics")

    text = json.dumps(stats, separators=(",", ":"), allow_nan=False, ensure_ascii=False, default=encode)
    for i in reversed(range(len(numbers))):  # 10 before 1: no marker is a prefix of a later one
        text = text.replace(f'"{token}{i}"', numbers[i])
    return text


def _nan_free(meta: pq.FileMetaData) -> set[Path]:
    """The float leaves known to hold no NaN: `annotate`'s list, or, for a file Spark's writer
    wrote (its bounds count NaN, as the largest value), every float leaf (checked per bound)."""
    if (meta.created_by or "").startswith("parquet-mr"):
        return _ALL
    text = (meta.metadata or {}).get(NAN_FREE_KEY)
    return {tuple(p) for p in json.loads(text)} if text else set()


class _Everything(set):
    def __contains__(self, item: object) -> bool:
        return True


_ALL = _Everything()


def _column_bounds(column: pq.ColumnSchema, chunks: list, nan_free: bool) -> tuple[Any, Any] | None:
    """The (min, max) to write for one column, None when none is needed (a binary column, or
    no values); raises `Unbounded` when the bounds cannot be written safely."""
    bound = _bounds_of(column, nan_free)
    if bound is None:
        return None
    with_values = [c for c in chunks if c is None or c.num_values > 0]  # num_values: the non-null ones
    if not with_values:
        return None  # only nulls: nullCount says so, and no reader needs a bound
    if not all(c is not None and c.has_min_max for c in with_values):
        raise Unbounded  # a row group with values and no bounds (a long string, a writer's choice)
    lows = [bound.value(c.min_raw) for c in with_values]
    highs = [bound.value(c.max_raw) for c in with_values]
    return bound.text(min(lows), False), bound.text(max(highs), True)


class _Bound:
    """How one column's footer bounds become Delta's: ``value`` reads a raw footer bound
    (raising `Unbounded` for one that cannot be written), ``text`` writes it."""

    def __init__(self, value: Callable[[Any], Any], text: Callable[[Any, bool], Any]) -> None:
        self.value = value
        self.text = text


def _bounds_of(column: pq.ColumnSchema, nan_free: bool) -> _Bound | None:
    """How to write a column's footer bounds as Delta statistics; None for a column that needs
    none; raises `Unbounded` for a type whose bounds are never written."""
    physical, logical = column.physical_type, column.logical_type
    kind = logical.type
    if kind == "DECIMAL" or column.converted_type == "DECIMAL":
        scale = column.scale
        return _Bound(_unscaled, lambda unscaled, upper: Decimal(f"{unscaled}E-{scale}"))  # exact: no rounding
    if physical == "BOOLEAN":
        return _Bound(bool, lambda value, upper: value)
    if physical in ("INT32", "INT64"):
        if kind == "DATE" or column.converted_type == "DATE":
            return _Bound(int, lambda days, upper: _date_text(days))
        if kind == "TIMESTAMP" or column.converted_type in ("TIMESTAMP_MILLIS", "TIMESTAMP_MICROS"):
            return _timestamp_bound(column)
        if _signed_integer(column):
            return _Bound(int, lambda value, upper: value)
        raise Unbounded  # unsigned, TIME, ...: types Spark does not write
    if physical in ("FLOAT", "DOUBLE"):
        if not nan_free:
            raise Unbounded
        return _Bound(_float_value, _float_text)
    if physical == "BYTE_ARRAY" and (kind == "STRING" or column.converted_type == "UTF8"):
        return _Bound(_string_value, lambda value, upper: truncated_max(value) if upper else value[:STRING_PREFIX])
    if physical in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY") and kind in ("NONE", "UNDEFINED") \
            and column.converted_type == "NONE":
        return None  # binary: Spark writes no bounds, and readers need none
    raise Unbounded  # INT96 timestamps, JSON, UUID, ...


def _unscaled(raw: Any) -> int:
    """A decimal's unscaled value from its footer bound (INT32/INT64, or big-endian bytes)."""
    if isinstance(raw, int):
        return raw
    if isinstance(raw, bytes) and raw:
        return int.from_bytes(raw, "big", signed=True)
    raise Unbounded


def _signed_integer(column: pq.ColumnSchema) -> bool:
    """A plain signed INT32/INT64 (Spark's byte, short, int and long)."""
    logical = column.logical_type
    if logical.type in ("NONE", "UNDEFINED"):
        return column.converted_type in ("NONE", "INT_8", "INT_16", "INT_32", "INT_64")
    return logical.type == "INT" and json.loads(logical.to_json()).get("isSigned", False)


_EPOCH_DATE = date(1970, 1, 1)


def _date_text(days: int) -> str:
    if not date(1, 1, 1).toordinal() <= _EPOCH_DATE.toordinal() + days <= date(9999, 12, 31).toordinal():
        raise Unbounded
    return (_EPOCH_DATE + timedelta(days=days)).isoformat()


_EPOCH = datetime(1970, 1, 1)
_PER_MS = {"milliseconds": 1, "microseconds": 1_000, "nanoseconds": 1_000_000}
_LOWEST_MS = (datetime(1, 1, 1) - _EPOCH) // timedelta(milliseconds=1)
_HIGHEST_MS = (datetime(9999, 12, 31, 23, 59, 59, 999000) - _EPOCH) // timedelta(milliseconds=1)


def _timestamp_bound(column: pq.ColumnSchema) -> _Bound:
    if column.logical_type.type == "TIMESTAMP":
        spec = json.loads(column.logical_type.to_json())
        unit, utc = spec.get("timeUnit"), bool(spec.get("isAdjustedToUTC"))
    else:
        unit = "milliseconds" if column.converted_type == "TIMESTAMP_MILLIS" else "microseconds"
        utc = True
    per_ms = _PER_MS.get(unit)
    if per_ms is None:
        raise Unbounded
    # the lower bound floored, the upper one ceiled: a reader comparing at microseconds
    # never skips a file holding a matching row (Spark's writer truncates both)
    return _Bound(int, lambda raw, upper: timestamp_text(-(-raw // per_ms) if upper else raw // per_ms, utc))


def timestamp_text(ms: int, utc: bool) -> str:
    """Milliseconds since the epoch as Delta writes a timestamp statistic: a four-digit year,
    ``Z`` for a TIMESTAMP, none for a TIMESTAMP_NTZ; `Unbounded` outside years 1-9999."""
    if not _LOWEST_MS <= ms <= _HIGHEST_MS:
        raise Unbounded
    moment = _EPOCH + timedelta(milliseconds=ms)
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:{moment.minute:02d}:"
            f"{moment.second:02d}.{moment.microsecond // 1000:03d}" + ("Z" if utc else ""))


def _float_value(raw: Any) -> float:
    value = float(raw)
    if math.isnan(value):
        raise Unbounded  # Spark's writer counts NaN as the largest value: the file holds one
    return value


def _float_text(value: float, upper: bool) -> float | str:
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return 0.0 if upper else -0.0  # both zeros are in [-0.0, 0.0] whichever the footer names
    return value


def _string_value(raw: Any) -> str:
    try:
        return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
    except UnicodeDecodeError:
        raise Unbounded from None  # not UTF-8: its byte order is no reader's string order


def truncated_max(value: str) -> str:
    """An upper bound of ``value`` about `STRING_PREFIX` code points long, as Spark's Delta
    writer makes it: the prefix, extended over U+10FFFF characters (nothing is above them),
    then a character above the next one (``\\x7f`` above ASCII, else U+10FFFF)."""
    if len(value) <= STRING_PREFIX:
        return value
    i = STRING_PREFIX
    while i < len(value) and value[i] == _MAX_CHAR:
        i += 1
    if i == len(value):
        return value
    return value[:i] + (_ASCII_MAX if ord(value[i]) < 0x7F else _MAX_CHAR)


def _selected(path: Path, wanted: list[Path] | None) -> bool:
    if wanted is None:
        return len(path) == 1
    lowered = tuple(p.lower() for p in path)  # Delta matches column names case-insensitively
    return any(lowered[:len(w)] == w for w in wanted)


def _put(into: dict, path: Path, value: Any) -> None:
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
