"""Overflow-safe bounds: a bound whose arithmetic leaves Spark's timestamp range is NULL.

Spark's TIMESTAMP holds microseconds in a BIGINT, so its last instant is year 294247.
``event_time + INTERVAL 15 MINUTES`` on an event time within 15 minutes of it raises
``long overflow`` (even without ANSI mode), which stopped the ingest of the whole
partition. Rendered with ``try_add``/``try_subtract``/``try_multiply`` the bound is
NULL instead, and a NULL bound already means what the rule wants (docs/semantics.md,
"Bounds past the last instant"): the branch holding it is empty. For a visibility bound
(``L <= W``) that is "never due", exact for a bound past the last instant, since W can
never reach it. For an expiry bound (``W < U``) it hides the row, the side that never
shows a row the policy hides (the overflow's direction is not known once it is NULL).
`waterline.semantics.branch_interval` applies the same rule to bound values outside
``[NEG_INF, POS_INF]``.
"""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp

# Spark's try_ function for each arithmetic operator a bound may hold: same operand types
# as the operator, NULL instead of an overflow error.
_TRY = {exp.Add: "try_add", exp.Sub: "try_subtract", exp.Mul: "try_multiply"}


@lru_cache(maxsize=1024)
def safe_bound_sql(expr: str) -> str:
    """Spark SQL of the bound ``expr`` with its +, - and * replaced by their try_ functions:
    NULL where the plain operator would overflow, the same value everywhere else."""
    tree = sqlglot.parse_one(expr, read="spark")
    if not any(isinstance(node, tuple(_TRY)) for node in tree.walk()):
        return expr

    # innermost first, so an operand replaced below is already in its parent's try_ call
    for node in reversed(list(tree.walk(bfs=False))):
        name = _TRY.get(type(node))
        if name is not None:
            safe = exp.Anonymous(this=name, expressions=[node.this, node.expression])
            if node is tree:
                tree = safe
            else:
                node.replace(safe)
    return tree.sql(dialect="spark")
