"""The held versions a small stream batch appends, from its collected rows: no Spark job.

The rule is `waterline.semantics.stream_batch` as `waterline.engine.ingest.stream.batch`
plans it in Spark: each key's last record (collapsed before, with its row hash and
schedule) against the key's current version in held, wherever it is (the newest seq; of
a move's two versions of one seq, the row rather than the removal):

* a record equal to a live current version in the same partition appends nothing;
* any other record is an upsert: an update of a live version in its partition, else an
  insert (a new key, a removed one, or one that moved here);
* a tombstone of a live key, or a record whose partition differs from the live
  version's, appends a removal in the current version's partition: no payload but the
  key, invisible in every tier, due at once.

For a batch small enough to collect, the driver also takes each key's last record
(`last_records`) and the batch's counts (`batch_counts`), so the batch costs one Spark job.
All of it column-wise (Arrow compute and numpy): keys grouped and paired as Spark groups
and joins them (`arrow_keys.key_groups`, `partner_rows`).
The stream property test draws per round whether Spark or this module computes the
versions and compares both with `waterline.semantics`.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from waterline.engine.core import columns as C
from waterline.engine.core.arrow_keys import key_groups, partner_rows
from waterline.semantics import NEG_INF

#: The column of a version's kind (insert, update, remove), as `versions.KIND` names it.
KIND = "_wl_kind"


def batch_versions(last: pa.Table, current: pa.Table, keys: Sequence[str], payload: Sequence[str],
                   tiers: Sequence[str], *, remove_column: str) -> pa.Table:
    """The versions of ``last`` (one row per key: payload, ``remove_column``, partition, row
    hash, schedule columns) against ``current`` (held's rows of those keys: key, seq,
    removed, hash, partition), not yet stamped (`stamped` adds their ingest time and seq);
    columns in the order `versions.version_columns` gives up to the ingest time, then `KIND`.
    Column-wise: each key's current version by one sort of ``current``, each record's by
    one join."""
    newest = current.take(pa.array(_newest(current, keys), pa.int64()))
    cur = partner_rows(last, newest, keys)  # each record's key's current version, -1 for none
    at = np.where(cur >= 0, cur, 0)

    def now(column: str) -> pa.Array:
        """Each record's current version's ``column`` (any value where there is none: not live)."""
        if not newest.num_rows:
            return pa.nulls(last.num_rows, newest.schema.field(column).type)
        return newest.column(column).combine_chunks().take(pa.array(at, pa.int64()))

    removal = _bools(last.column(remove_column))
    live = (cur >= 0) & ~_bools(now(C.REMOVED))
    moved = live & _bools(pc.fill_null(pc.not_equal(now(C.PARTITION), last.column(C.PARTITION)), True))
    same = live & ~moved & _equal(now(C.HASH), last.column(C.HASH).combine_chunks())
    upserts = np.flatnonzero(~removal & ~same)
    gone = np.flatnonzero(live & (removal | moved))
    kinds = np.where((live & ~moved)[upserts], "update", "insert")
    schedule = [c for t in tiers for c in (C.vis(t), C.tau(t), C.last(t))]
    up = last.take(pa.array(upserts, pa.int64()))
    up_columns = {c: up.column(c) for c in [*payload, C.HASH, C.PARTITION, *schedule]}
    up_columns.update({C.REMOVED: pa.array(np.zeros(len(upserts), dtype=bool)), KIND: pa.array(kinds, pa.string())})
    n = len(gone)
    down = last.take(pa.array(gone, pa.int64()))
    down_columns = {c: down.column(c) if c in keys else pa.nulls(n, last.schema.field(c).type) for c in payload}
    down_columns.update({
        C.HASH: pa.nulls(n, last.schema.field(C.HASH).type),
        C.PARTITION: now(C.PARTITION).take(pa.array(gone, pa.int64())).cast(pa.string()),
        C.REMOVED: pa.array(np.ones(n, dtype=bool)), KIND: pa.array(["remove"] * n, pa.string()),
    })
    for t in tiers:  # `schedule.removal_schedule`: invisible everywhere, due at once
        down_columns[C.vis(t)] = pa.array([[]] * n, last.schema.field(C.vis(t)).type)
        down_columns[C.tau(t)] = down_columns[C.last(t)] = pa.array(np.full(n, NEG_INF, dtype=np.int64))
    order = [*payload, C.HASH, C.PARTITION, C.REMOVED, KIND, *[C.vis(t) for t in tiers],
             *[c for t in tiers for c in (C.tau(t), C.last(t))]]
    return pa.concat_tables([_table(up_columns, order), _table(down_columns, order)])


def stamped(versions: pa.Table, *, seq: int, ingested_at_us: int) -> pa.Table:
    """``versions`` (`batch_versions`) with their ingest time and held sequence number, the
    last columns `versions.version_columns` names."""
    n = versions.num_rows
    stamp = pa.array(np.full(n, ingested_at_us, dtype=np.int64)).cast(pa.timestamp("us", tz="UTC"))
    return versions.append_column(C.INGESTED_AT, stamp).append_column(C.SEQ, pa.array(np.full(n, seq, dtype=np.int64)))


def _newest(current: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """Of each key's rows in ``current``, the current version: the newest seq, and of a move's
    two versions of one seq, the row rather than the removal."""
    if not current.num_rows:
        return np.zeros(0, dtype=np.int64)
    order, starts = key_groups(current, keys, [(current.column(C.SEQ), "descending"),
                                                (pc.fill_null(current.column(C.REMOVED), False), "ascending")])
    return order[starts]


def _bools(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean column as numpy, NULL as false."""
    return pc.fill_null(values, False).to_numpy(zero_copy_only=False).astype(bool)


def _equal(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Where two row hashes (a struct of two integers, or text) are equal; NULL equals nothing."""
    if pa.types.is_struct(a.type) and pa.types.is_struct(b.type):
        same = np.ones(len(a), dtype=bool)
        for i in range(a.type.num_fields):
            same &= _bools(pc.equal(pc.struct_field(a, [i]), pc.struct_field(b, [i])))
        return same & _bools(a.is_valid()) & _bools(b.is_valid())
    return _bools(pc.equal(a, b))


def last_records(rows: pa.Table, keys: Sequence[str], order: Sequence[str]) -> pa.Table:
    """Of each key's rows, the one greatest by ``order`` (the record's topic, Kafka partition
    and offset), as Spark's ``row_number`` over the key ordered by them descending picks it;
    keys are equal where SQL's grouping is (NaN with NaN, -0.0 with 0.0)."""
    if rows.num_rows == 0:
        return rows
    ranked, starts = key_groups(rows, keys, [(rows.column(c), "descending") for c in order])
    return rows.take(pa.array(np.sort(ranked[starts]), pa.int64()))


def batch_counts(rows: pa.Table, *, reason: str, remove: str, partition: str, event_us: str,
                 bad_partition: Callable[[str], str | None]) -> tuple[pa.Table, dict]:
    """The batch's rows with ``reason`` set where ``bad_partition`` faults a valid row's
    partition value (asked once per distinct value), and its counts as
    `stream.batch_write.checked` gives them in Spark: rows, quarantined, and the greatest
    ``event_us`` of a valid row that is no removal (None: none)."""
    valid = pc.is_null(rows.column(reason))
    values = pc.unique(pc.filter(rows.column(partition), valid)).to_pylist()
    bad = {v: why for v in values if v is not None and (why := bad_partition(v)) is not None}
    if bad:
        values = pa.array(list(bad), pa.string())
        why = pa.array(list(bad.values()), rows.schema.field(reason).type).take(pc.index_in(rows.column(partition), values))
        at = rows.schema.get_field_index(reason)
        rows = rows.set_column(at, rows.schema.field(at), pc.coalesce(rows.column(reason), why))
        valid = pc.is_null(rows.column(reason))
    upserts = pc.and_(valid, pc.invert(pc.fill_null(rows.column(remove), False)))
    latest = pc.max(pc.filter(rows.column(event_us), upserts)).as_py()
    quarantined = rows.num_rows - pc.sum(valid.cast(pa.int64())).as_py() if rows.num_rows else 0
    return rows, {"rows": rows.num_rows, "quarantined": quarantined, "max_event": latest}


def _table(columns: dict, order: list[str]) -> pa.Table:
    return pa.table({c: columns[c] for c in order})


__all__ = ["KIND", "batch_counts", "batch_versions", "last_records", "stamped"]
