"""Key equality over Arrow tables as Spark's joins and grouping have it.

Spark normalizes -0.0 to 0.0 and every NaN to one NaN in join and grouping keys; Acero's
hash join compares the bits. `join_keys` makes the two agree, so a semi join in Acero
(`matching_rows`) finds the rows Spark's join would. Both the held key lookup
(`waterline.engine.delta.arrow_files`) and a tier step's diff (`arrow_step.tier_changes`)
join on these keys.
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


def matching_rows(rows: pa.Table, wanted: pa.Table, keys: Sequence[str]) -> pa.Array:
    """The ascending numbers of the rows of ``rows`` whose ``keys`` equal those of a row of
    ``wanted`` (NULL equals nothing, as in Spark's join: keys are never NULL in held or a
    tier, whose NULL-key rows are quarantined)."""
    keys = list(keys)
    if not rows.num_rows or not wanted.num_rows:
        return pa.array([], pa.int64())
    numbered = join_keys(rows.select(keys)).append_column(_ROW, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    wanted = join_keys(wanted.select(keys).cast(rows.select(keys).schema))  # Acero joins equal types only
    # Acero builds its hash table from the right side: the smaller one (1M rows took 1.2-3.7 s
    # to build, a few thousand a few milliseconds)
    if wanted.num_rows <= numbered.num_rows:
        found = numbered.join(wanted, keys=keys, join_type="left semi").column(_ROW)
    else:
        found = wanted.join(numbered, keys=keys, join_type="right semi").column(_ROW)
    values = found.combine_chunks()
    return values.take(pc.array_sort_indices(values))  # the join does not keep the order


def _normal(column: pa.ChunkedArray) -> pa.ChunkedArray:
    if not pa.types.is_floating(column.type):
        return column
    return pc.if_else(pc.is_nan(column), pa.scalar(float("nan"), column.type), pc.add(column, pa.scalar(0.0, column.type)))


__all__ = ["join_keys", "matching_rows"]
