"""The held versions a small stream batch appends, from its collected rows: no Spark job.

The rule is `waterline.semantics.stream_batch` as `waterline.engine.spark.stream_ingest`
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
The stream property test draws per round whether Spark or this module computes the
versions and compares both with `waterline.semantics`.
"""

from __future__ import annotations

from typing import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from waterline.engine.core import columns as C
from waterline.engine.core.arrow_step import identities
from waterline.semantics import NEG_INF

#: The column of a version's kind (insert, update, remove), as `versions.KIND` names it.
KIND = "_wl_kind"


def batch_versions(last: pa.Table, current: pa.Table, keys: Sequence[str], payload: Sequence[str],
                   tiers: Sequence[str], *, remove_column: str, seq: int, ingested_at_us: int) -> pa.Table:
    """The versions of ``last`` (one row per key: payload, ``remove_column``, partition, row
    hash, schedule columns) against ``current`` (held's rows of those keys: key, seq,
    removed, hash, partition), stamped with ``seq`` and ``ingested_at_us``; columns in
    the order `versions.version_columns` gives, then `KIND`."""
    seqs, removed_now, hashes_now, parts_now = (current.column(c).to_pylist()
                                                for c in (C.SEQ, C.REMOVED, C.HASH, C.PARTITION))
    newest: dict[tuple, tuple[tuple[int, bool], int]] = {}
    for i, key in enumerate(identities(current, keys)):
        rank = (seqs[i], not removed_now[i])
        if key not in newest or rank > newest[key][0]:
            newest[key] = (rank, i)
    removal, parts, hashes = (last.column(c).to_pylist() for c in (remove_column, C.PARTITION, C.HASH))
    upserts, kinds, gone, gone_parts = [], [], [], []
    for j, key in enumerate(identities(last, keys)):
        found = newest.get(key)
        cur = None if found is None else found[1]
        live = cur is not None and not removed_now[cur]
        moved = live and parts_now[cur] != parts[j]
        same = live and not moved and hashes_now[cur] == hashes[j]
        if not removal[j] and not same:
            upserts.append(j)
            kinds.append("update" if live and not moved else "insert")
        if live and (removal[j] or moved):
            gone.append(j)
            gone_parts.append(parts_now[cur])
    schedule = [c for t in tiers for c in (C.vis(t), C.tau(t), C.last(t))]
    up = last.take(pa.array(upserts, pa.int64()))
    up_columns = {c: up.column(c) for c in [*payload, C.HASH, C.PARTITION, *schedule]}
    up_columns.update({C.REMOVED: pa.array([False] * len(upserts), pa.bool_()), KIND: pa.array(kinds, pa.string())})
    n = len(gone)
    down = last.take(pa.array(gone, pa.int64()))
    down_columns = {c: down.column(c) if c in keys else pa.nulls(n, last.schema.field(c).type) for c in payload}
    down_columns.update({
        C.HASH: pa.nulls(n, last.schema.field(C.HASH).type), C.PARTITION: pa.array(gone_parts, pa.string()),
        C.REMOVED: pa.array([True] * n, pa.bool_()), KIND: pa.array(["remove"] * n, pa.string()),
    })
    for t in tiers:  # `schedule.removal_schedule`: invisible everywhere, due at once
        down_columns[C.vis(t)] = pa.array([[]] * n, last.schema.field(C.vis(t)).type)
        down_columns[C.tau(t)] = down_columns[C.last(t)] = pa.array([NEG_INF] * n, pa.int64())
    order = [*payload, C.HASH, C.PARTITION, C.REMOVED, KIND, *[C.vis(t) for t in tiers],
             *[c for t in tiers for c in (C.tau(t), C.last(t))]]
    out = pa.concat_tables([_table(up_columns, order), _table(down_columns, order)])
    stamp = pa.array([ingested_at_us] * out.num_rows, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    return out.append_column(C.INGESTED_AT, stamp).append_column(C.SEQ, pa.array([seq] * out.num_rows, pa.int64()))


def last_records(rows: pa.Table, keys: Sequence[str], order: Sequence[str]) -> pa.Table:
    """Of each key's rows, the one greatest by ``order`` (the record's topic, Kafka partition
    and offset), as Spark's ``row_number`` over the key ordered by them descending picks it;
    keys are equal where SQL's grouping is (NaN with NaN, -0.0 with 0.0)."""
    if rows.num_rows == 0:
        return rows
    ids = identities(rows, keys)
    seen: set[tuple] = set()
    picked = []
    for i in pc.sort_indices(rows, sort_keys=[(c, "descending") for c in order]).to_pylist():
        if ids[i] not in seen:
            seen.add(ids[i])
            picked.append(i)
    return rows.take(pa.array(sorted(picked), pa.int64()))


def batch_counts(rows: pa.Table, *, reason: str, remove: str, partition: str, event_us: str,
                 bad_partition: Callable[[str], str | None]) -> tuple[pa.Table, dict]:
    """The batch's rows with ``reason`` set where ``bad_partition`` faults a valid row's
    partition value (asked once per distinct value), and its counts as
    `stream_write.checked` gives them in Spark: rows, quarantined, and the greatest
    ``event_us`` of a valid row that is no removal (None: none)."""
    valid = pc.is_null(rows.column(reason))
    values = pc.unique(pc.filter(rows.column(partition), valid)).to_pylist()
    bad = {v: why for v in values if v is not None and (why := bad_partition(v)) is not None}
    if bad:
        reasons = [r if r is not None or p not in bad else bad[p]
                   for r, p in zip(rows.column(reason).to_pylist(), rows.column(partition).to_pylist())]
        at = rows.schema.get_field_index(reason)
        rows = rows.set_column(at, rows.schema.field(at), pa.array(reasons, rows.schema.field(at).type))
        valid = pc.is_null(rows.column(reason))
    upserts = pc.and_(valid, pc.invert(pc.fill_null(rows.column(remove), False)))
    latest = pc.max(pc.filter(rows.column(event_us), upserts)).as_py()
    quarantined = rows.num_rows - pc.sum(valid.cast(pa.int64())).as_py() if rows.num_rows else 0
    return rows, {"rows": rows.num_rows, "quarantined": quarantined, "max_event": latest}


def _table(columns: dict, order: list[str]) -> pa.Table:
    return pa.table({c: columns[c] for c in order})


__all__ = ["KIND", "batch_counts", "batch_versions", "last_records"]
