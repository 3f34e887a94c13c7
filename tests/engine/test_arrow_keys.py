"""`arrow_keys`: the semi join the held lookup and a tier step's diff share, the pairing of
rows by key and the grouping of rows by key, against a plain Python statement of Spark's
key equality (no JVM), a struct key among them."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from waterline.engine.core.arrow_keys import key_groups, matching_rows, partner_rows

values = st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, float("nan")]))
words = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))


def spark_key(row: tuple) -> tuple:
    """A key as Spark's join compares it: -0.0 is 0.0 and every NaN one NaN."""
    return tuple("NaN" if isinstance(v, float) and math.isnan(v) else (0.0 if v == 0.0 and isinstance(v, float) else v)
                 for v in row)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.tuples(words, values), max_size=12), wanted=st.lists(st.tuples(words, values), max_size=6),
       large=st.booleans())
def test_matching_rows_are_the_rows_whose_keys_spark_would_join(rows, wanted, large):
    left = pa.table({"s": pa.array([r[0] for r in rows], pa.string()), "f": pa.array([r[1] for r in rows], pa.float64()),
                     "payload": list(range(len(rows)))})
    text = pa.large_string() if large else pa.string()  # another string type: cast to the rows' before the join
    right = pa.table({"f": pa.array([w[1] for w in wanted], pa.float64()), "s": pa.array([w[0] for w in wanted], text)})

    got = matching_rows(left, right, ["s", "f"]).to_pylist()

    joinable = {spark_key(w) for w in wanted if None not in w}  # NULL equals nothing in a join
    assert got == [i for i, r in enumerate(rows) if None not in r and spark_key(r) in joinable]


def test_no_rows_and_no_wanted_keys():
    empty = pa.table({"k": pa.array([], pa.string())})
    some = pa.table({"k": ["a", "b"]})
    assert matching_rows(empty, some, ["k"]).to_pylist() == []
    assert matching_rows(some, empty, ["k"]).to_pylist() == []


def _struct(pair):
    return None if pair is None else {"x": pair[0], "y": pair[1]}


structs = st.one_of(st.none(), st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from([0.0, -0.0, 1.5, float("nan")])))
STRUCT = pa.struct([("x", pa.string()), ("y", pa.float64())])


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.tuples(words, values, structs, st.integers(0, 3)), max_size=14))
def test_key_groups_group_keys_as_spark_does_and_order_within_them(rows):
    table = pa.table({"s": pa.array([r[0] for r in rows], pa.string()), "f": pa.array([r[1] for r in rows], pa.float64()),
                      "n": pa.array([_struct(r[2]) for r in rows], STRUCT)})
    rank = pa.array([r[3] for r in rows], pa.int64())

    order, starts = key_groups(table, ["s", "f", "n"], [(rank, "descending")])

    keys = [spark_key((r[0], r[1])) + (None if r[2] is None else spark_key(r[2]),) for r in rows]
    groups = [list(g) for g in np.split(order, starts[1:])] if rows else []
    assert sorted(order.tolist()) == list(range(len(rows)))
    assert len(groups) == len(set(keys))  # NULL groups with NULL, NaN with NaN, -0.0 with 0.0
    for group in groups:
        assert len({keys[i] for i in group}) == 1
        assert [rows[i][3] for i in group] == sorted((rows[i][3] for i in group), reverse=True)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.tuples(words, structs), max_size=10), drawn=st.lists(st.tuples(words, structs), max_size=8))
def test_partner_rows_pair_each_row_with_the_row_spark_would_join(rows, drawn):
    def table(items):
        return pa.table({"s": pa.array([i[0] for i in items], pa.string()), "n": pa.array([_struct(i[1]) for i in items], STRUCT)})

    def key(item):
        return None if None in item else spark_key((item[0],)) + (spark_key(item[1]),)

    seen: set = set()  # a key is at most one row of the other table: the first of each drawn
    other = [o for o in drawn if (k := (spark_key((o[0],)), None if o[1] is None else spark_key(o[1]))) not in seen
             and not seen.add(k)]

    got = partner_rows(table(rows), table(other), ["s", "n"]).tolist()

    index = {key(o): i for i, o in enumerate(other) if key(o) is not None}
    assert got == [index.get(key(r), -1) if key(r) is not None else -1 for r in rows]
