"""Held's lookup columns kept in memory by a long-running stream, brought up to date from the log.

Each small stream batch looks up its keys' current versions in held (key, seq, removed,
hash, partition). Read from every held file, that lookup grows with held: a stream at
5,000 records/s adds a file a second, and its batches' lookups grew from 0.1 s to most
of a second in five minutes. A process that runs batch after batch keeps those columns
of the files it has read, per held table, and reads only the files added since: an
append adds files and removes none. A snapshot that lacks a kept file (gc, maintain's
compaction, a user's OPTIMIZE) or a table with another id (dropped and made again) is
read whole again, so the kept rows are always those of the snapshot asked about.

The kept rows shrink to each key's newest version (`newest_per_key`) whenever they
double or pass ``limit``; past ``limit`` rows after that (more keys than that), nothing
is kept for the table and the lookup reads the files one at a time, as
`arrow_files.read_matching` does.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from waterline.engine.core import columns as C
from waterline.engine.core.arrow_keys import join_keys
from waterline.engine.delta.arrow_files import DataFile, read_files, read_matching, rows_matching
from waterline.engine.delta.table_log import TableLog

#: How many held tables one process keeps (a stream has one; tests make many).
_TABLES = 4
_RANK, _ROW = "_wl_rank", "_wl_row"


@dataclass(frozen=True)
class _Kept:
    table_id: str
    schema: pa.Schema
    files: frozenset[str]
    rows: pa.Table
    compacted: int  # rows after the last `newest_per_key`


_kept: OrderedDict[str, _Kept] = OrderedDict()
_lock = threading.Lock()


def current_rows(held_log: TableLog, schema: pa.Schema, keys: pa.Table, *, limit: int) -> pa.Table:
    """Held's rows (``schema``'s columns: the key, seq, removed, hash, partition) of the keys in
    ``keys`` at ``held_log``'s snapshot: every version kept of each key, newest included."""
    files = {a.path: DataFile(a.path, a.partition_values) for a in held_log.add_files()}
    table_id = held_log.metadata().id
    names = keys.column_names
    with _lock:
        kept = _kept.pop(held_log.path, None)
        if kept is not None and (kept.table_id, kept.schema) == (table_id, schema) and kept.files <= files.keys():
            rows, compacted = kept.rows, kept.compacted
            adding = [f for path, f in files.items() if path not in kept.files]
        else:
            rows, compacted = schema.empty_table(), 0
            adding = list(files.values())
        rows, compacted = _add(held_log.path, rows, compacted, adding, names, limit=limit)
        if rows is None:  # too many to keep: one file at a time, nothing kept
            return read_matching(held_log.path, list(files.values()), schema, keys)
        _kept[held_log.path] = _Kept(table_id, schema, frozenset(files), rows, compacted)
        while len(_kept) > _TABLES:
            _kept.popitem(last=False)
    return rows_matching(rows, keys)


def _add(table: str, rows: pa.Table, compacted: int, files: Sequence[DataFile], keys: Sequence[str], *,
         limit: int) -> tuple[pa.Table | None, int]:
    """``rows`` with those of ``files``, read a file at a time and shrunk whenever they double
    (None: more than ``limit`` rows even then)."""
    parts = [rows]
    size = rows.num_rows
    for f in files:
        part = read_files(table, [f], rows.schema)
        parts.append(part)
        size += part.num_rows
        if size > 2 * compacted + 1024 or size > limit:
            rows = newest_per_key(pa.concat_tables(parts), keys)
            compacted = size = rows.num_rows
            parts = [rows]
            if compacted > limit:
                return None, 0
    return pa.concat_tables(parts).combine_chunks(), compacted


def newest_per_key(rows: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Of each key's rows, the newest: the greatest seq, and of a move's two versions of one
    seq the row rather than the removal (`ingest.collected_versions.batch_versions` picks the same)."""
    if rows.num_rows == 0:
        return rows
    rank = pc.add(pc.multiply(rows.column(C.SEQ), 2), pc.cast(pc.invert(rows.column(C.REMOVED)), pa.int64()))
    numbered = (join_keys(rows.select(list(keys))).append_column(_RANK, rank)
                .append_column(_ROW, pa.array(range(rows.num_rows), pa.int64())))
    best = numbered.group_by(list(keys)).aggregate([(_RANK, "max")]).rename_columns([*keys, _RANK])
    found = numbered.join(best, keys=[*keys, _RANK], join_type="inner").column(_ROW)
    return rows.take(found).combine_chunks()


def forget() -> None:
    """Keep nothing (tests; a process that is done streaming)."""
    with _lock:
        _kept.clear()


__all__ = ["current_rows", "forget", "newest_per_key"]
