"""The release plan: what a compiled policy says about when a row is visible.

A plan is a disjunction of branches. Each branch is a static guard plus lower and
upper bounds on the waterline W; its visibility is the half-open interval
``[greatest(starts), least(ends))`` in microseconds, empty when the guard is not
TRUE, a bound is NULL, or start >= end. This module is data only: the passes over
it live beside it (parse -> normalize -> plan -> :mod:`waterline.policy.render`, the
Spark SQL and the text of ``waterline plan``), so nothing here imports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from waterline.errors import WaterlineError


class PolicyError(WaterlineError):
    """A policy that cannot be compiled. One line, quoting the offending fragment."""


@dataclass(frozen=True)
class Bound:
    """One bound on W. ``expr`` is Spark SQL of type TIMESTAMP, without WATERLINE().

    As a lower bound: ``strict=False`` is ``expr <= W`` (start = expr),
    ``strict=True`` is ``expr < W`` (start = expr + 1µs). As an upper bound:
    ``strict=True`` is ``W < expr`` (end = expr), ``strict=False`` is
    ``W <= expr`` (end = expr + 1µs).
    """

    expr: str
    strict: bool


@dataclass(frozen=True)
class Branch:
    """One disjunct: visible for W in ``[greatest(lowers), least(uppers))`` when ``guard`` is TRUE.

    ``guard=None`` means TRUE; no lower bound means minus infinity, no upper
    bound means plus infinity.
    """

    guard: str | None
    lowers: tuple[Bound, ...] = ()
    uppers: tuple[Bound, ...] = ()


@dataclass(frozen=True)
class ReleasePlan:
    """A compiled policy: the union of its branches' intervals is the row's visibility."""

    policy: str
    branches: tuple[Branch, ...]
    tier: str | None = field(default=None, compare=False)
