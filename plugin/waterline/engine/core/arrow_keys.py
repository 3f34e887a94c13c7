"""Key equality over Arrow tables as Spark's joins and grouping have it.

Spark normalizes -0.0 to 0.0 and every NaN to one NaN in join and grouping keys; Acero's
hash join compares the bits. `join_keys` makes the two agree, so a semi join in Acero
(`matching_rows`) finds the rows Spark's join would, a join pairs each row with its
partner (`partner_rows`), and a sort groups rows by key as Spark's grouping does
(`key_groups`). A nested key (a struct), which Acero neither joins nor sorts on, is
numbered per distinct value first. The held key lookup (`waterline.engine.delta.arrow_files`),
a tier step (`release.driver_step`) and a small stream batch (`ingest.collected_versions`) use them.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: The row-number column `matching_rows` joins along (Acero's join carries no struct column).
_ROW = "_wl_row"


def join_keys(keys: pa.Table) -> pa.Table:
    """Key columns equal where Spark's join and grouping find them equal: adding 0.0 turns
    -0.0 into 0.0 and leaves every other value as it is; each NaN becomes the same NaN."""
    return pa.Table.from_arrays([_normal(c) for c in keys.columns], names=keys.column_names)


def _comparable(*tables: pa.Table) -> list[pa.Table]:
    """``tables`` (the same key columns) with each nested key column (a struct, a list),
    which Acero neither sorts nor joins on, replaced by one integer per distinct value,
    numbered across all of them; the other columns as `join_keys` gives them."""
    tables = [join_keys(t) for t in tables]
    nested = [i for i, f in enumerate(tables[0].schema) if pa.types.is_nested(f.type)]
    for i in nested:
        numbers: dict = {}
        for n, table in enumerate(tables):
            codes = [None if v is None else numbers.setdefault(_hashable(v), len(numbers))
                     for v in table.column(i).to_pylist()]
            tables[n] = table.set_column(i, table.schema.field(i).name, pa.array(codes, pa.int64()))
    return tables


def _hashable(value):
    """A nested key value as a hashable value equal where Spark's grouping is (NaN with NaN)."""
    if isinstance(value, dict):
        return tuple((k, _hashable(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, float):
        return "NaN" if value != value else value + 0.0
    return value


def matching_rows(rows: pa.Table, wanted: pa.Table, keys: Sequence[str]) -> pa.Array:
    """The ascending numbers of the rows of ``rows`` whose ``keys`` equal those of a row of
    ``wanted`` (NULL equals nothing, as in Spark's join: keys are never NULL in held or a
    tier, whose NULL-key rows are quarantined)."""
    keys = list(keys)
    if not rows.num_rows or not wanted.num_rows:
        return pa.array([], pa.int64())
    # Acero joins equal types only
    numbered, wanted = _comparable(rows.select(keys), wanted.select(keys).cast(rows.select(keys).schema))
    numbered = numbered.append_column(_ROW, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    # Acero builds its hash table from the right side: the smaller one (1M rows took 1.2-3.7 s
    # to build, a few thousand a few milliseconds)
    if wanted.num_rows <= numbered.num_rows:
        found = numbered.join(wanted, keys=keys, join_type="left semi").column(_ROW)
    else:
        found = wanted.join(numbered, keys=keys, join_type="right semi").column(_ROW)
    values = found.combine_chunks()
    return values.take(pc.array_sort_indices(values))  # the join does not keep the order


def partner_rows(rows: pa.Table, other: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """Each row's row of ``other`` with its ``keys``, -1 for none (Spark's key equality,
    `join_keys`; a key is at most one row of ``other``)."""
    keys = list(keys)
    found = np.full(rows.num_rows, -1, dtype=np.int64)
    if not rows.num_rows or not other.num_rows:
        return found
    left, right = _comparable(rows.select(keys).cast(other.select(keys).schema), other.select(keys))
    right = right.append_column("_wl_t", pa.array(np.arange(other.num_rows)))
    left = left.append_column("_wl_j", pa.array(np.arange(rows.num_rows)))
    pairs = left.join(right, keys=keys, join_type="inner")
    found[pairs.column("_wl_j").to_numpy()] = pairs.column("_wl_t").to_numpy()
    return found


def key_groups(rows: pa.Table, keys: Sequence[str], then: Sequence[tuple[pa.ChunkedArray | pa.Array | np.ndarray, str]]
               ) -> tuple[np.ndarray, np.ndarray]:
    """The rows sorted by their keys, then by ``then`` ((values, "ascending" or "descending")
    each), and where each key's rows start in that order: keys equal as Spark groups them
    (-0.0 with 0.0, NaN with NaN, NULL with NULL)."""
    normal = _comparable(rows.select(list(keys)))[0]
    names = [f"k{i}" for i in range(len(keys))] + [f"t{i}" for i in range(len(then))]
    sortable = pa.Table.from_arrays([*normal.columns, *[pa.array(v) if isinstance(v, np.ndarray) else v
                                                         for v, _ in then]], names=names)
    by = [(n, "ascending") for n in names[:len(keys)]] + [(names[len(keys) + i], d) for i, (_, d) in enumerate(then)]
    order = pc.sort_indices(sortable, sort_keys=by).to_numpy(zero_copy_only=False)
    new = np.zeros(len(order), dtype=bool)
    new[:1] = True
    taken = pa.array(order, pa.int64())
    for column in normal.columns:
        values = column.take(taken)
        a, b = values[1:], values[:-1]
        equal = pc.or_(pc.fill_null(pc.equal(a, b), False), pc.and_(pc.is_null(a), pc.is_null(b)))
        if pa.types.is_floating(column.type):
            equal = pc.or_(equal, pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False))  # NULL is no NaN
        new[1:] |= ~equal.to_numpy(zero_copy_only=False).astype(bool)
    return order, np.flatnonzero(new)


def _normal(column: pa.ChunkedArray) -> pa.ChunkedArray:
    if not pa.types.is_floating(column.type):
        return column
    return pc.if_else(pc.is_nan(column), pa.scalar(float("nan"), column.type), pc.add(column, pa.scalar(0.0, column.type)))


__all__ = ["join_keys", "key_groups", "matching_rows", "partner_rows"]
