"""The release plan: what a compiled policy says about when a row is visible.

A plan is a disjunction of branches. Each branch is a static guard plus lower and
upper bounds on the waterline W; its visibility is the half-open interval
``[greatest(starts), least(ends))`` in microseconds, empty when the guard is not
TRUE, a bound is NULL, or start >= end. The Spark SQL rendering lives in
:mod:`waterline.policy.render`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from waterline.errors import WaterlineError
from waterline.policy.render import (
    describe_plan, plan_to_json, render_interval, render_non_empty, render_tau, render_vis,
)


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

    def vis_sql(self) -> str:
        """Spark SQL of type ``ARRAY<STRUCT<start: BIGINT, end: BIGINT>>``.

        Sorted, disjoint, merged half-open intervals in µs; an empty array when
        no W makes the policy TRUE.
        """
        return render_vis(self.branches)

    def tau_sql(self, vis: str | None = None) -> str:
        """Spark SQL BIGINT: the earliest start of ``vis``, or NEG_INF when it is empty.

        ``vis`` may name a column (or expression) already holding :meth:`vis_sql`,
        so the bounds are not evaluated twice.
        """
        return render_tau(self.branches, vis)

    def single_interval_sql(self) -> tuple[str, str, str] | None:
        """For a one-branch plan, Spark SQL ``(non_empty, start, end)``: the row is visible
        for W in [start, end) when ``non_empty`` is TRUE, and never otherwise.

        None for other plans (their visibility needs :meth:`vis_sql`'s array).
        """
        if len(self.branches) != 1:
            return None
        _, start, end = render_interval(self.branches[0])
        return render_non_empty(self.branches[0]), start, end

    def describe(self) -> str:
        """The branches as a small query-plan-like text, for ``waterline plan``."""
        return describe_plan(self)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the plan, for ``waterline plan --json``."""
        return plan_to_json(self)
