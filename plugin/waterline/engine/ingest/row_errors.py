"""Which row a data error in a tier's policy comes from, told in one line.

Spark stops a job on the first row whose arithmetic overflows or whose cast fails, and
says which operator failed but not on which row. A policy's bounds cannot fail that way
(their arithmetic is rendered with try_ functions, `waterline.policy.overflow`), but its
guards are evaluated as written (a guard NULL on overflow could flip under NOT). When an
ingest or stream batch fails on such an error, `locate` asks Spark once more, with every
operator of every policy in its try_ form: the first row on which one gives NULL while its
operands do not is the row, the operator's columns the column. Nothing was committed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import sqlglot
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from sqlglot import exp

from waterline.engine.core.sqltext import quoted
from waterline.engine.spark.errors import condition, spark_message
from waterline.policy import ReleasePlan
from waterline.spec import FeedSpec

# Spark's conditions for one row's value an operator cannot compute
DATA_ERRORS = frozenset({
    "ARITHMETIC_OVERFLOW", "CAST_INVALID_INPUT", "CAST_OVERFLOW", "DIVIDE_BY_ZERO", "DATETIME_OVERFLOW",
    "INTERVAL_ARITHMETIC_OVERFLOW", "INTERVAL_DIVIDED_BY_ZERO", "NUMERIC_VALUE_OUT_OF_RANGE",
    "REMAINDER_BY_ZERO",
})
_TRY = {exp.Add: "try_add", exp.Sub: "try_subtract", exp.Mul: "try_multiply", exp.Div: "try_divide",
        exp.Mod: "try_mod"}
_PROBE = "_wl_probe"


@dataclass(frozen=True)
class _Probe:
    tier: str
    fragment: str  # the operator, as the policy renders it
    columns: tuple[str, ...]
    fails: str  # SQL: TRUE on a row where the operator cannot compute its value


def is_data_error(exc: BaseException) -> bool:
    """Whether Spark stopped on one row's value (an overflow, a failed cast, a zero divisor)."""
    if condition(exc) in DATA_ERRORS:
        return True
    return "java.lang.ArithmeticException" in str(exc) or "java.time.DateTimeException" in str(exc)


def _is_cast(node: exp.Expr) -> bool:
    # sqlglot reads Spark's CAST as a TryCast (non-ANSI Spark's NULL on failure); its
    # try_cast carries safe=True
    return isinstance(node, exp.Cast) and not node.args.get("safe")


def _safe(node: exp.Expr) -> exp.Expr:
    """``node`` with every operator in its try_ form (NULL instead of an error)."""
    tree = node.copy()
    for inner in reversed(list(tree.walk(bfs=False))):
        if type(inner) in _TRY:
            safe: exp.Expr = exp.Anonymous(this=_TRY[type(inner)], expressions=[inner.this, inner.expression])
        elif _is_cast(inner):
            safe = exp.TryCast(this=inner.this, to=inner.to, safe=True)
        else:
            continue
        if inner is tree:
            tree = safe
        else:
            inner.replace(safe)
    return tree


def _probes(tier: str, plan: ReleasePlan) -> list[_Probe]:
    texts = {text for branch in plan.branches
             for text in (branch.guard, *(b.expr for b in (*branch.lowers, *branch.uppers))) if text}
    probes = []
    for text in sorted(texts):
        for node in sqlglot.parse_one(text, read="spark").walk():
            if type(node) in _TRY:
                operands = [node.this, node.expression]
            elif _is_cast(node):
                operands = [node.this]
            else:
                continue
            present = " AND ".join(f"({_safe(o).sql(dialect='spark')}) IS NOT NULL" for o in operands)
            fails = f"({_safe(node).sql(dialect='spark')}) IS NULL AND {present}"
            columns = tuple(sorted({c.name for c in node.find_all(exp.Column)}))
            if not columns:  # a constant fails on every row or none: Spark's message says which
                continue
            probes.append(_Probe(tier, node.sql(dialect="spark"), columns, fails))
    return probes


def locate(exc: BaseException, spec: FeedSpec, rows: DataFrame, plans: Mapping[str, ReleasePlan]) -> str | None:
    """For a data error ``exc`` raised while ``rows`` were tagged with ``plans``: "tier T:
    column C of the row with key K: ..." (one line), or None when it is no such error or no
    policy operator fails on any row (the transform's own, say)."""
    if not is_data_error(exc):
        return None
    probes = [p for tier, plan in plans.items() for p in _probes(tier, plan)]
    if not probes:
        return None
    which = "CASE " + " ".join(f"WHEN {p.fails} THEN {i}" for i, p in enumerate(probes)) + " END"
    try:
        found = (rows.select(*[F.col(quoted(k)) for k in spec.key], F.expr(which).alias(_PROBE))
                 .where(f"{_PROBE} IS NOT NULL").limit(1).collect())
    except Exception:  # the probe failed too (a function no try_ form covers): Spark's message stays
        return None
    if not found:
        return None
    row, probe = found[0], probes[found[0][_PROBE]]
    key = ", ".join(f"{k}={row[k]!r}" for k in spec.key)
    columns = ", ".join(probe.columns) or "(none)"
    return (f"tier {probe.tier}: column {columns} of the row with key {key}: the policy's "
            f'"{probe.fragment}" cannot be computed ({spark_message(exc) or type(exc).__name__}); '
            "nothing was committed")
