"""Type checks: bounds must be TIMESTAMP, static conditions must be BOOLEAN.

Without a ``typer`` only statically obvious types are known (literals, casts,
typed columns, a few well-known functions); anything else is left to Spark.
"""

from __future__ import annotations

from typing import Callable, Mapping

from sqlglot import exp

from waterline.policy.parse import fragment
from waterline.policy.plan import PolicyError

Typer = Callable[[str], str]

_BOOLEAN_NODES = (exp.Predicate, exp.Connector, exp.Not, exp.Boolean, exp.Between, exp.In, exp.Is)
_NUMERIC_NODES = (exp.Mul, exp.Div, exp.Mod, exp.IntDiv, exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor)
_FUNCTION_TYPES = {
    "timestamp": {"timestamp_millis", "timestamp_seconds", "timestamp_micros", "make_timestamp",
                  "to_timestamp", "date_trunc", "from_utc_timestamp", "to_utc_timestamp"},
    "bigint": {"unix_micros", "unix_millis", "unix_seconds", "unix_timestamp", "unix_date",
               "length", "size", "year", "month", "day", "hour", "minute", "second"},
    "date": {"to_date", "current_date", "make_date", "last_day", "next_day"},
    "string": {"concat", "lower", "upper", "substring", "substr", "date_format", "format_string"},
}
_ACCEPTED_AS_NULL = {"void", "null"}


def obvious_type(node: exp.Expr, columns: Mapping[str, str] | None) -> str | None:
    """The Spark type of ``node`` when it is obvious without Spark, else None."""
    if isinstance(node, exp.Paren):
        return obvious_type(node.this, columns)
    if isinstance(node, exp.Literal):
        return "string" if node.is_string else "numeric"
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Interval):
        return "interval"
    if isinstance(node, _BOOLEAN_NODES):
        return "boolean"
    if isinstance(node, exp.Cast):  # TryCast is a Cast
        return normal_type(node.to.sql(dialect="spark"))
    if isinstance(node, exp.Column):
        if columns is None or len(node.parts) != 1:
            return None
        lowered = {k.lower(): v for k, v in columns.items()}
        kind = lowered.get(node.name.lower())
        return normal_type(kind) if kind else None
    if isinstance(node, (exp.Add, exp.Sub)):
        left, right = obvious_type(node.this, columns), obvious_type(node.expression, columns)
        if right == "interval" and left == "timestamp" or left == "interval" and right == "timestamp":
            return "timestamp"
        if _numeric(left) and _numeric(right):
            return "numeric"
        return None
    if isinstance(node, _NUMERIC_NODES):
        return "numeric"
    if isinstance(node, exp.Neg):
        inner = obvious_type(node.this, columns)
        return inner if _numeric(inner) or inner == "interval" else None
    if isinstance(node, exp.Func):
        name = _function_name(node)
        for kind, names in _FUNCTION_TYPES.items():
            if name in names:
                return kind
    return None


def normal_type(kind: str) -> str:
    """A Spark type name as Spark's ``simpleString`` spells it, lowercase: what Spark's analyzer
    (the ``typer``) answers, so a type written in a schema or a CAST compares equal to it.
    ``TIMESTAMP_LTZ`` is ``timestamp``; ``VARCHAR(n)`` and ``CHAR(n)`` are read as ``string``."""
    kind = " ".join(str(kind).split()).lower()
    if kind == "timestamp_ltz":
        return "timestamp"
    if kind.startswith(("varchar(", "char(")) or kind in ("varchar", "char", "text"):
        return "string"
    return kind


#: Types a bound may be built on with interval arithmetic (a date or a timestamp; event_time
#: text is parsed at ingest, so its column is a timestamp by the time policies run).
_TIME_TYPES = ("timestamp", "timestamp_ntz", "date")


def non_time_operand(node: exp.Expr, columns: Mapping[str, str] | None) -> tuple[exp.Expr, str] | None:
    """In a bound built as ``x + INTERVAL ...`` (or ``-``, nested), the operand ``x`` whose
    type is known and is not a date or time, with that type; None when there is none.

    ``symbol + INTERVAL 15 MINUTES`` over a STRING ``symbol`` is the case: Spark would try to
    read the text as a timestamp (NULL, or an error under ANSI), and the row would never be
    released, so it is refused where the column's type is known without Spark."""
    if isinstance(node, exp.Paren):
        return non_time_operand(node.this, columns)
    if not isinstance(node, (exp.Add, exp.Sub)):
        return None
    left, right = node.this, node.expression
    for operand, other in ((left, right), (right, left)):
        if obvious_type(other, columns) != "interval":
            continue
        kind = obvious_type(operand, columns)
        if kind is None:
            return non_time_operand(operand, columns)
        if kind not in (*_TIME_TYPES, "interval", *_ACCEPTED_AS_NULL):
            return operand, kind
    return None


def _numeric(kind: str | None) -> bool:
    return kind is not None and (
        kind in ("numeric", "bigint", "int", "smallint", "tinyint", "double", "float")
        or kind.startswith("decimal")
    )


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    try:
        return node.sql(dialect="spark").split("(", 1)[0].strip().lower()
    except Exception:
        return ""


def _typed(node: exp.Expr, typer: Typer) -> str:
    sql = node.sql(dialect="spark")
    try:
        kind = typer(sql)
    except Exception as err:  # the typer is Spark's analyzer: its errors are the user's
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise PolicyError(f"cannot resolve {fragment(node)}: {first}") from None
    return str(kind).strip().lower()


def _display(kind: str) -> str:
    return "a number" if kind == "numeric" else kind.upper()


def check_bound(node: exp.Expr, columns: Mapping[str, str] | None, typer: Typer | None) -> None:
    """Reject a bound (the side compared with WATERLINE()) that is not a TIMESTAMP."""
    operand = non_time_operand(node, columns)
    if operand is not None:
        inner, kind = operand
        column = f"column {inner.name}" if isinstance(inner, exp.Column) else fragment(inner)
        raise PolicyError(f"WATERLINE() is compared with {fragment(node)}, which adds an interval to {column} "
                          f"({_display(kind)}), not to a date or TIMESTAMP: build the bound on a time column "
                          f"(convert it in the transform, e.g. CAST({inner.sql(dialect='spark')} AS TIMESTAMP))")
    kind = obvious_type(node, columns)
    if kind is None and typer is not None:
        kind = _typed(node, typer)
    if kind is None or kind == "timestamp" or kind in _ACCEPTED_AS_NULL:
        return
    text = fragment(node)
    if kind == "string" and not isinstance(node, exp.Column):  # a text literal: TIMESTAMP '...'
        hint = f"write a TIMESTAMP, e.g. TIMESTAMP {text[1:-1]} or CAST({text[1:-1]} AS TIMESTAMP)"
    elif _numeric(kind):
        inner = text[1:-1]
        hint = f"convert it, e.g. timestamp_millis({inner}), timestamp_seconds({inner}) or timestamp_micros({inner})"
    else:
        hint = f"convert it, e.g. CAST({text[1:-1]} AS TIMESTAMP)"
    raise PolicyError(f"WATERLINE() is compared with {text}, which is {_display(kind)}, not TIMESTAMP: {hint}")


def check_condition(node: exp.Expr, columns: Mapping[str, str] | None, typer: Typer | None) -> None:
    """Reject a static condition that is not BOOLEAN (e.g. a bare timestamp column)."""
    if isinstance(node, exp.Paren):
        return check_condition(node.this, columns, typer)
    if isinstance(node, exp.Connector):
        check_condition(node.this, columns, typer)
        return check_condition(node.expression, columns, typer)
    if isinstance(node, exp.Not):
        return check_condition(node.this, columns, typer)
    kind = obvious_type(node, columns)
    if kind is None and typer is not None and not isinstance(node, exp.Null):
        kind = _typed(node, typer)
    if kind is None or kind == "boolean" or kind in _ACCEPTED_AS_NULL:
        return
    raise PolicyError(
        f"a policy must be a boolean condition, but {fragment(node)} is {_display(kind)}; "
        "compare it with WATERLINE(), e.g. \"event_time <= WATERLINE()\""
    )
