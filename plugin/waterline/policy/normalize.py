"""Normalise a parsed policy into branches: a disjunction of (guard, lowers, uppers).

AND is distributed over OR only where WATERLINE() appears; purely static
sub-expressions (including static ORs and NOTs) stay whole inside the guard, so
NOT never has to be pushed down and the branch count stays small.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from sqlglot import exp

from waterline.policy.checks import Typer, check_bound, check_condition
from waterline.policy.parse import contains_marker, fragment, is_marker
from waterline.policy.plan import Bound, Branch, PolicyError

MAX_BRANCHES = 64

_FLIP = {exp.LT: exp.GT, exp.LTE: exp.GTE, exp.GT: exp.LT, exp.GTE: exp.LTE}
_ORDERING = tuple(_FLIP)
_EQUALITY = (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ, exp.Is, exp.In)
_ATOMIC = (exp.Column, exp.Literal, exp.Func, exp.Paren, exp.Cast, exp.Null, exp.Boolean)
_YEAR_MONTH = re.compile(r"year|month|quarter", re.IGNORECASE)


@dataclass(frozen=True)
class _Static:
    node: exp.Expr


@dataclass(frozen=True)
class _Limit:
    """One bound on W, already moved to the non-WATERLINE side."""

    node: exp.Expr
    lower: bool
    strict: bool


_Conjunction = tuple  # of _Static | _Limit


@dataclass(frozen=True)
class _Context:
    columns: Mapping[str, str] | None
    typer: Typer | None


def to_branches(tree: exp.Expr, columns: Mapping[str, str] | None = None,
                typer: Typer | None = None) -> tuple[Branch, ...]:
    """The branches of ``tree``; raises PolicyError for anything outside the policy language."""
    context = _Context(columns, typer)
    branches: list[Branch] = []
    for conjunction in _dnf(tree, context):
        branch = _branch(conjunction)
        if branch is not None and branch not in branches:
            branches.append(branch)
    return tuple(branches)


def _dnf(node: exp.Expr, context: _Context) -> list[_Conjunction]:
    if isinstance(node, exp.Paren):
        return _dnf(node.this, context)
    if not contains_marker(node):
        if isinstance(node, exp.Boolean):
            return [()] if node.this else []
        check_condition(node, context.columns, context.typer)
        return [(_Static(node),)]
    if isinstance(node, exp.And):
        left, right = _dnf(node.this, context), _dnf(node.expression, context)
        _cap(len(left) * len(right), node)
        return [a + b for a in left for b in right]
    if isinstance(node, exp.Or):
        both = _dnf(node.this, context) + _dnf(node.expression, context)
        _cap(len(both), node)
        return both
    if isinstance(node, _ORDERING):
        return [(_comparison(type(node), node.this, node.expression, node, context),)]
    if isinstance(node, exp.Between):
        return [_between(node, context)]
    raise PolicyError(_misplaced_marker(node))


def _cap(count: int, node: exp.Expr) -> None:
    if count > MAX_BRANCHES:
        raise PolicyError(
            f"policy expands to more than {MAX_BRANCHES} branches at {fragment(node)}: "
            "factor the static conditions out of the OR"
        )


def _between(node: exp.Between, context: _Context) -> _Conjunction:
    if node.args.get("symmetric"):
        raise PolicyError(f"BETWEEN SYMMETRIC cannot bound WATERLINE(): {fragment(node)}")
    subject, low, high = node.this, node.args["low"], node.args["high"]
    atoms: list[_Static | _Limit] = []
    # a BETWEEN b AND c is (b <= a AND a <= c) in Spark, NULLs included.
    for left, right in ((low, subject), (subject, high)):
        if contains_marker(left) or contains_marker(right):
            atoms.append(_comparison(exp.LTE, left, right, node, context))
        else:
            condition = exp.LTE(this=left.copy(), expression=right.copy())
            check_condition(condition, context.columns, context.typer)
            atoms.append(_Static(condition))
    return tuple(atoms)


def _comparison(op: type, left: exp.Expr, right: exp.Expr, whole: exp.Expr,
                context: _Context) -> _Limit:
    left_has, right_has = contains_marker(left), contains_marker(right)
    if left_has and right_has:
        raise PolicyError(f"WATERLINE() on both sides of a comparison: {fragment(whole)}")
    if right_has:  # put W on the left: a < W  is  W > a
        op, left, right = _FLIP[op], right, left
    offsets = _marker_offsets(left)
    check_bound(right, context.columns, context.typer)
    # W + I op U  <=>  W op U - I: intervals are fixed lengths (month intervals are refused).
    bound = right.copy()
    if offsets and not isinstance(bound, _ATOMIC):
        bound = exp.Paren(this=bound)
    for sign, interval in offsets:
        cls = exp.Sub if sign > 0 else exp.Add
        term = interval.copy() if isinstance(interval, exp.Interval) else exp.Paren(this=interval.copy())
        bound = cls(this=bound, expression=term)
    lower = op in (exp.GT, exp.GTE)
    strict = op in (exp.GT, exp.LT)
    return _Limit(bound, lower=lower, strict=strict)


def _marker_offsets(side: exp.Expr) -> list[tuple[int, exp.Expr]]:
    """For ``WATERLINE() ± I1 ± I2 ...`` the signed intervals; PolicyError for anything else."""
    if is_marker(side):
        return []
    if isinstance(side, exp.Paren):
        return _marker_offsets(side.this)
    if isinstance(side, (exp.Add, exp.Sub)):
        this, other = side.this, side.expression
        if contains_marker(this) and not contains_marker(other):
            _check_interval(other, side)
            return _marker_offsets(this) + [(1 if isinstance(side, exp.Add) else -1, other)]
        if isinstance(side, exp.Add) and contains_marker(other) and not contains_marker(this):
            _check_interval(this, side)
            return _marker_offsets(other) + [(1, this)]
        raise PolicyError(
            f"only WATERLINE() + INTERVAL or WATERLINE() - INTERVAL is allowed, not {fragment(side)}"
        )
    raise PolicyError(_misplaced_marker(side))


def _check_interval(node: exp.Expr, context: exp.Expr) -> None:
    if isinstance(node, exp.Paren | exp.Neg):
        return _check_interval(node.this, context)
    if isinstance(node, (exp.Add, exp.Sub)):
        _check_interval(node.this, context)
        return _check_interval(node.expression, context)
    if not isinstance(node, exp.Interval):
        raise PolicyError(
            f"only WATERLINE() ± INTERVAL literals are allowed: {fragment(node)} in {fragment(context)} "
            "is not an INTERVAL; move the arithmetic to the other side of the comparison"
        )
    if _YEAR_MONTH.search(node.sql(dialect="spark")):
        raise PolicyError(
            f"month and year intervals cannot be moved off WATERLINE() exactly: {fragment(context)}; "
            "put the interval on the other side, e.g. \"event_time + INTERVAL 1 MONTH <= WATERLINE()\""
        )


def _misplaced_marker(node: exp.Expr) -> str:
    """Why WATERLINE() may not appear inside ``node`` (its closest offending context)."""
    if isinstance(node, exp.Not):
        return (f"WATERLINE() may not appear under NOT: {fragment(node)}; "
                "negate the comparison instead (NOT (WATERLINE() < x) is x <= WATERLINE())")
    context = node if isinstance(node, _EQUALITY + (exp.Case, exp.If)) else _closest_context(node)
    text = fragment(context)
    if is_marker(context):
        return f"WATERLINE() must be compared with a TIMESTAMP (<, <=, >, >=, BETWEEN): {text}"
    if isinstance(context, _EQUALITY):
        return (f"WATERLINE() may not be tested for equality or membership: {text}; "
                "use <, <=, >, >= or BETWEEN")
    if isinstance(context, exp.Not):
        return f"WATERLINE() may not appear under NOT: {text}"
    if isinstance(context, (exp.Case, exp.If)):
        return f"WATERLINE() may not appear inside CASE or IF: {text}"
    if isinstance(context, exp.Func):
        return f"WATERLINE() may not appear inside function arguments: {text}"
    if isinstance(context, (exp.Binary, exp.Unary)) and not isinstance(context, (exp.Predicate, exp.Connector)):
        return f"only WATERLINE() + INTERVAL or WATERLINE() - INTERVAL is allowed, not {text}"
    return (f"WATERLINE() may only appear in comparisons (<, <=, >, >=, BETWEEN) "
            f"combined with AND and OR: {text}")


def _closest_context(node: exp.Expr) -> exp.Expr:
    marker = next(n for n in node.walk() if is_marker(n))
    context = marker
    while context is not node and (context is marker or isinstance(context, exp.Paren)):
        context = context.parent
    return context


def _branch(conjunction: _Conjunction) -> Branch | None:
    statics: list[exp.Expr] = []
    lowers: list[Bound] = []
    uppers: list[Bound] = []
    for atom in conjunction:
        if isinstance(atom, _Static):
            if atom.node not in statics:
                statics.append(atom.node)
            continue
        bound = Bound(atom.node.sql(dialect="spark"), atom.strict)
        target = lowers if atom.lower else uppers
        if bound not in target:
            target.append(bound)
    guard = exp.and_(*(s.copy() for s in statics)).sql(dialect="spark") if statics else None
    return Branch(guard, tuple(lowers), tuple(uppers))
