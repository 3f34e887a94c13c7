"""Parse a policy with sqlglot's Spark dialect and reject what can never be compiled.

Everything here works on the sqlglot tree; nothing starts Spark.
"""

from __future__ import annotations

import datetime
import logging
import re
from typing import Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from waterline.policy.plan import PolicyError

MARKER = "waterline"
_FRAGMENT_LIMIT = 160

# Each sample is parsed once so the deny list follows however this sqlglot
# version models the function (a dedicated class or an anonymous call).
_NONDETERMINISTIC_SAMPLES = (
    "rand()", "randn()", "random()", "uuid()", "shuffle(x)", "uniform(0, 1)", "randstr(1)",
    "current_timestamp()", "current_date()", "current_time()", "now()", "localtimestamp()",
    "curdate()", "monotonically_increasing_id()", "spark_partition_id()", "input_file_name()",
    "input_file_block_start()", "input_file_block_length()", "reflect('a', 'b')",
    "java_method('a', 'b')", "try_reflect('a', 'b')",
)
# Spark resolves these bare words as functions, not columns.
_NONDETERMINISTIC_BARE = frozenset({"current_timestamp", "current_date", "current_time", "localtimestamp"})


def _nondeterministic_kinds() -> tuple[tuple[type, ...], frozenset[str]]:
    classes: set[type] = set()
    names: set[str] = set()
    for sample in _NONDETERMINISTIC_SAMPLES:
        name = sample.split("(", 1)[0]
        names.add(name)
        try:
            node = sqlglot.parse_one(sample, read="spark", into=exp.Condition)
        except Exception:  # an unknown sample must never break the import
            continue
        if isinstance(node, exp.Func) and not isinstance(node, exp.Anonymous):
            classes.add(type(node))
    return tuple(classes), frozenset(names)


_NONDETERMINISTIC_CLASSES, _NONDETERMINISTIC_NAMES = _nondeterministic_kinds()


def quote(text: str) -> str:
    """``text`` in double quotes, on one line, shortened when long."""
    text = " ".join(str(text).split())
    if len(text) > _FRAGMENT_LIMIT:
        text = text[: _FRAGMENT_LIMIT - 3] + "..."
    return f'"{text}"'


def fragment(node: exp.Expr) -> str:
    """The Spark SQL text of ``node``, quoted, for error messages."""
    try:
        text = node.sql(dialect="spark")
    except Exception:
        text = str(node)
    return quote(text)


def is_marker(node: exp.Expr) -> bool:
    """True for the ``WATERLINE()`` call (any case)."""
    return isinstance(node, exp.Anonymous) and str(node.name).lower() == MARKER


def contains_marker(node: exp.Expr) -> bool:
    return any(is_marker(n) for n in node.walk())


def parse_policy(sql: str) -> exp.Expr:
    """Parse ``sql`` as one Spark SQL expression, or raise PolicyError."""
    if not isinstance(sql, str):
        raise PolicyError(f"policy must be a string of Spark SQL, not {type(sql).__name__}")
    if not sql.strip():
        raise PolicyError('empty policy: write "TRUE" to publish every row at once')
    sqlglot_logger = logging.getLogger("sqlglot")
    previous_level = sqlglot_logger.level
    # sqlglot logs its own fallbacks as warnings; the PolicyError is the only report users get.
    sqlglot_logger.setLevel(logging.CRITICAL)
    try:
        tree = sqlglot.parse_one(sql, read="spark", into=exp.Condition)
    except (ParseError, TokenError) as err:
        raise PolicyError(syntax_message(sql, err)) from None
    finally:
        sqlglot_logger.setLevel(previous_level)
    if tree is None or isinstance(tree, exp.Block):
        raise PolicyError(f"policy must be a single SQL expression: {quote(sql)}")
    tree = _keep_multi_unit_intervals_whole(tree)
    # sqlglot keeps what it cannot parse as a raw Command instead of failing.
    unparsed = next((n for n in tree.walk() if isinstance(n, exp.Command)), None)
    if unparsed is not None:
        raise PolicyError(f"syntax error near {fragment(unparsed)} in policy {quote(sql)}")
    return tree


def _interval_terms(node: exp.Expr) -> list[exp.Expr] | None:
    """The literals of an unparenthesised sum of intervals, or None."""
    if isinstance(node, exp.Interval):
        return [node]
    if isinstance(node, exp.Add):
        left, right = _interval_terms(node.this), _interval_terms(node.expression)
        if left is not None and right is not None:
            return left + right
    return None


def _keep_multi_unit_intervals_whole(tree: exp.Expr) -> exp.Expr:
    """Undo a rendering trap: sqlglot reads ``INTERVAL 1 DAY 2 HOURS`` as an unparenthesised
    ``INTERVAL '1' DAY + INTERVAL '2' HOURS``, which renders wrongly after ``-`` or ``*``.

    ``x - INTERVAL 1 DAY 2 HOURS`` becomes ``x - INTERVAL '1' DAY - INTERVAL '2' HOURS``
    (Spark's own order of application); other operators get parentheses.
    """

    def rewrite(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Sub) and isinstance(node.expression, exp.Add):
            terms = _interval_terms(node.expression)
            if terms is not None:
                result = node.this
                for term in terms:
                    result = exp.Sub(this=result, expression=term)
                return result
        if isinstance(node, (exp.Binary, exp.Unary)) and not isinstance(node, (exp.Add, exp.Paren)):
            for key in ("this", "expression"):
                child = node.args.get(key)
                if isinstance(child, exp.Add) and _interval_terms(child) is not None:
                    node.set(key, exp.Paren(this=child))
        return node

    return tree.transform(rewrite, copy=False)


def _first_line(err: Exception) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__


def syntax_message(sql: str, err: ParseError | TokenError, what: str = "policy") -> str:
    """sqlglot's parse error as one line: where, the fragment it stopped at, and the SQL
    (``what``: "policy", "transform"), quoted."""
    if isinstance(err, TokenError):
        return f"syntax error: {_first_line(err)} in {what} {quote(sql)}"
    details = err.errors[0] if getattr(err, "errors", None) else {}
    near = (details.get("highlight") or "").strip()
    where = ""
    if details.get("line") is not None and details.get("col") is not None:
        where = f" at line {details['line']}, column {details['col']}"
    description = details.get("description") or _first_line(err)
    near_text = f" near {quote(near)}" if near else ""
    return f"syntax error{where}{near_text}: {description}; in {what} {quote(sql)}"


def validate(tree: exp.Expr, columns: Mapping[str, str] | None = None) -> None:
    """Reject what no rewrite can fix: bad markers, non-determinism, aggregates, unknown columns."""
    known = {name.lower() for name in columns} if columns is not None else None
    for node in tree.walk():
        if is_marker(node) and node.expressions:
            raise PolicyError(f"WATERLINE() takes no arguments: {fragment(node)}")
        if _is_nondeterministic(node, known):
            raise PolicyError(
                f"non-deterministic function {fragment(node)} is not allowed: "
                "a policy must give the same answer every time it is evaluated"
            )
        if isinstance(node, (exp.AggFunc, exp.Window)):
            raise PolicyError(
                f"aggregate or window function {fragment(node)} is not allowed: "
                "a policy is evaluated on one row at a time"
            )
        if isinstance(node, (exp.Query, exp.Subquery)):
            raise PolicyError(f"subqueries are not allowed in a policy: {fragment(node)}")
        impossible = _impossible_time_literal(node)
        if impossible:
            raise PolicyError(f"impossible date or time {quote(node.this.name)} in the policy: {impossible}")
        if known is not None and isinstance(node, exp.Column) and not _column_known(node, known):
            listing = ", ".join(sorted(columns)) if columns else "none"
            raise PolicyError(f"unknown column {fragment(node)} (the feed's columns: {listing})")


_TIME_TYPES = frozenset({"date", "timestamp", "timestamp_ntz", "timestamp_ltz"})
_DATE_TIME_TEXT = re.compile(r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2}))?)?")


def _impossible_time_literal(node: exp.Expr) -> str | None:
    """Why a DATE or TIMESTAMP literal (``TIMESTAMP '2026-02-30 00:00'``, or a CAST of text)
    names no real day or time, or None. Spark refuses such a literal when the policy runs, or,
    cast without ANSI, reads NULL: a row never released. Years outside 1-9999 are Spark's to judge."""
    if not (isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string):
        return None
    if node.to.sql(dialect="spark").lower() not in _TIME_TYPES:
        return None
    match = _DATE_TIME_TEXT.match(node.this.name)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(part) if part else 0 for part in match.groups())
    try:
        datetime.datetime(year, month, day, hour, minute, second)
    except ValueError as err:
        return str(err)
    return None


def _is_nondeterministic(node: exp.Expr, known: set[str] | None) -> bool:
    # sqlglot reads unix_timestamp() as unix_timestamp(current_timestamp()).
    if isinstance(node, exp.StrToUnix) and isinstance(node.this, _NONDETERMINISTIC_CLASSES):
        return True
    if isinstance(node, _NONDETERMINISTIC_CLASSES):
        return True
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower() in _NONDETERMINISTIC_NAMES
    if isinstance(node, exp.Column) and not node.table:
        identifier = node.this
        quoted = isinstance(identifier, exp.Identifier) and identifier.quoted
        name = node.name.lower()
        return not quoted and name in _NONDETERMINISTIC_BARE and not (known and name in known)
    return False


def _column_known(column: exp.Column, known: set[str]) -> bool:
    # Spark matches names case-insensitively. `a.b` may be a struct field of
    # column `a` or a qualified `b`; accept either reading.
    parts = [p.name.lower() for p in column.parts]
    return bool(parts) and (parts[0] in known or parts[-1] in known)
