"""Hypothesis strategies for the differential test: rows over a small time grid and
random policies built only from the allowed forms of the policy language."""

from __future__ import annotations

from hypothesis import strategies as st

T0_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z
STEP_US = 300_000_000  # 5 minutes: data, literals and most intervals sit on this grid
GRID_STEPS = 48  # W grid spans T0 ± 4 hours

SCHEMA = "id INT, event_time TIMESTAMP, embargo_until TIMESTAMP, status STRING, n BIGINT"
COLUMNS = {"id": "int", "event_time": "timestamp", "embargo_until": "timestamp", "status": "string", "n": "bigint"}

INTERVALS = (
    "INTERVAL 5 MINUTES", "INTERVAL '15' MINUTE", "INTERVAL 1 HOUR", "INTERVAL 1 HOUR 30 MINUTES",
    "INTERVAL '0 00:10:00' DAY TO SECOND", "INTERVAL 1 SECOND", "INTERVAL 1 MICROSECOND",
    "INTERVAL 1 DAY", "INTERVAL '15 minutes'",
)
TIMESTAMP_LITERALS = tuple(
    f"TIMESTAMP '2026-01-01 00:{minute:02d}:00'" for minute in (0, 5, 10, 20)
) + ("TIMESTAMP '2025-12-31 23:50:00'",)


def grid_us(step: int) -> int:
    return T0_US + step * STEP_US


_grid_time = st.one_of(st.none(), st.integers(-4, 4).map(grid_us))
_millis = st.one_of(st.none(), st.integers(-4, 4).map(lambda k: grid_us(k) // 1000))
_status = st.sampled_from([None, "final", "preliminary", "draft"])

rows = st.lists(st.tuples(_grid_time, _grid_time, _status, _millis), min_size=4, max_size=24)

_interval = st.sampled_from(INTERVALS)
_ts_column = st.sampled_from(["event_time", "embargo_until"])

bound = st.one_of(
    _ts_column,
    st.builds(lambda c, op, i: f"{c} {op} {i}", _ts_column, st.sampled_from(["+", "-"]), _interval),
    st.sampled_from(TIMESTAMP_LITERALS),
    st.sampled_from([
        "timestamp_millis(n)",
        "coalesce(embargo_until, event_time)",
        "greatest(event_time, embargo_until)",
        "CASE WHEN status = 'final' THEN event_time ELSE embargo_until END",
        "CAST(NULL AS TIMESTAMP)",
    ]),
)

marker_side = st.one_of(
    st.sampled_from(["WATERLINE()", "waterline()", "Waterline( )"]),
    st.builds(lambda op, i: f"WATERLINE() {op} {i}", st.sampled_from(["+", "-"]), _interval),
    st.builds(lambda i: f"{i} + WATERLINE()", _interval),
    st.builds(lambda i, j: f"(WATERLINE() + {i}) - {j}", _interval, _interval),
)

_op = st.sampled_from(["<", "<=", ">", ">="])


def _comparison(w: str, op: str, b: str, marker_left: bool) -> str:
    return f"{w} {op} {b}" if marker_left else f"{b} {op} {w}"


comparison = st.builds(_comparison, marker_side, _op, bound, st.booleans())

between = st.one_of(
    st.builds(lambda w, a, b: f"{w} BETWEEN {a} AND {b}", marker_side, bound, bound),
    st.builds(lambda x, w, b: f"{x} BETWEEN {w} AND {b}", bound, marker_side, bound),
    st.builds(lambda x, a, w: f"{x} BETWEEN {a} AND {w}", bound, bound, marker_side),
    st.builds(lambda x, w, v: f"{x} BETWEEN {w} AND {v}", bound, marker_side, marker_side),
)

static_atom = st.sampled_from([
    "status = 'final'", "status IN ('final', 'preliminary')", "status IS NULL",
    "n > 1767225600000", "event_time < embargo_until", "TRUE", "FALSE", "NULL",
    "CAST(NULL AS BOOLEAN)", "embargo_until IS NOT NULL",
])

static_tree = st.recursive(
    static_atom,
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a} AND {b})", inner, inner),
        st.builds(lambda a, b: f"({a} OR {b})", inner, inner),
        st.builds(lambda a: f"NOT ({a})", inner),
    ),
    max_leaves=3,
)

policy = st.recursive(
    st.one_of(comparison, comparison, between, static_tree),
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner),
        st.builds(lambda a, b: f"{a} AND {b}", inner, inner),
        st.builds(lambda a, b: f"({a} OR {b})", inner, inner),
    ),
    max_leaves=6,
)
