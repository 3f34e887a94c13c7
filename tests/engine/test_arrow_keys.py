"""`arrow_keys.matching_rows`: the semi join the held lookup and a tier step's diff share,
against a plain Python statement of Spark's key equality (no JVM)."""

from __future__ import annotations

import math

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from waterline.engine.core.arrow_keys import matching_rows

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
