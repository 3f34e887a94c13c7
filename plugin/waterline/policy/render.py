"""Render a release plan as Spark SQL, and as text/JSON for ``waterline plan``: the last
pass over a plan (parse -> normalize -> plan -> render). The engine calls `vis_sql`,
`tau_sql` and `single_interval_sql`; `describe_plan` and `plan_to_json` serve ``plan``.

Spark SQL notes that shape this file:
* ``greatest``/``least`` skip NULLs, so NULL bounds are tested explicitly first.
* ``x + 1`` on BIGINT raises under ANSI mode at the top of the range; the
  ``least(..., POS_INF - 1)`` clamp keeps ``+1µs`` from ever overflowing.
* A bound's arithmetic is rendered with Spark's try_ functions
  (`waterline.policy.overflow`): past year 294247 the bound is NULL, not an error.
* Intervals are merged with ``aggregate`` over a sorted array, carrying the
  interval being extended separately so no array index can go out of bounds.
"""

from __future__ import annotations

from typing import Any, Sequence

from waterline.policy.overflow import safe_bound_sql
from waterline.policy.plan import Bound, Branch, ReleasePlan
from waterline.semantics import NEG_INF as _NEG_INF
from waterline.semantics import POS_INF as _POS_INF

INTERVAL_TYPE = "STRUCT<`start`: BIGINT, `end`: BIGINT>"
VIS_TYPE = f"ARRAY<{INTERVAL_TYPE}>"
_EMPTY_VIS = f"CAST(array() AS {VIS_TYPE})"
_NEG_INF_SQL = str(_NEG_INF)  # Spark 4 reads this literal as BIGINT
_POS_INF_SQL = str(_POS_INF)


def _micros_plus_one(expr: str) -> str:
    return f"(least(unix_micros({expr}), {_POS_INF - 1}) + 1)"


def _start(bound: Bound) -> str:
    # L < W starts one µs after L.
    expr = safe_bound_sql(bound.expr)
    return _micros_plus_one(expr) if bound.strict else f"unix_micros({expr})"


def _end(bound: Bound) -> str:
    # W <= U ends (exclusively) one µs after U.
    expr = safe_bound_sql(bound.expr)
    return f"unix_micros({expr})" if bound.strict else _micros_plus_one(expr)


def _combine(function: str, parts: Sequence[str], default: str) -> str:
    if not parts:
        return default
    if len(parts) == 1:
        return parts[0]
    return f"{function}({', '.join(parts)})"


def render_interval(branch: Branch) -> tuple[str, str, str]:
    """Spark SQL ``(condition, start, end)`` of one branch: visible for W in [start, end)
    when ``condition`` is TRUE (``start``/``end`` are BIGINT µs, non-NULL when it is)."""
    start = _combine("greatest", [_start(b) for b in branch.lowers], _NEG_INF_SQL)
    end = _combine("least", [_end(b) for b in branch.uppers], _POS_INF_SQL)
    conditions = []
    if branch.guard is not None:
        conditions.append(f"coalesce(({branch.guard}), false)")
    for bound in (*branch.lowers, *branch.uppers):
        # NULL for a NULL operand and for a bound past Spark's last instant alike
        not_null = f"({safe_bound_sql(bound.expr)}) IS NOT NULL"
        if not_null not in conditions:
            conditions.append(not_null)
    return (" AND ".join(conditions) if conditions else "TRUE"), start, end


def render_branch(branch: Branch) -> str:
    """Spark SQL STRUCT<start, end> for one branch, NULL when its guard or a bound fails."""
    condition, start, end = render_interval(branch)
    interval = f"named_struct('start', {start}, 'end', {end})"
    return interval if condition == "TRUE" else f"CASE WHEN {condition} THEN {interval} END"


def render_non_empty(branch: Branch) -> str:
    """Spark SQL BOOLEAN: the branch's interval exists and is not empty."""
    condition, start, end = render_interval(branch)
    return f"({condition}) AND ({start}) < ({end})"


def _non_empty_intervals(branches: Sequence[Branch]) -> str:
    items = ", ".join(render_branch(b) for b in branches)
    # NULL elements fail the predicate too, so they are dropped with the empty ones.
    return f"filter(array({items}), _wl_i -> _wl_i.`start` < _wl_i.`end`)"


def _single_interval(branch: Branch) -> str:
    """A one-branch policy's visibility without lambdas (Spark interprets those row by row)."""
    _, start, end = render_interval(branch)
    return (
        f"CASE WHEN {render_non_empty(branch)} "
        f"THEN array(named_struct('start', {start}, 'end', {end})) ELSE {_EMPTY_VIS} END"
    )


def render_vis(branches: Sequence[Branch]) -> str:
    """Spark SQL ARRAY<STRUCT<start, end>>: sorted, disjoint, merged µs intervals."""
    if not branches:
        return _EMPTY_VIS
    if len(branches) == 1:
        return _single_interval(branches[0])
    sorted_intervals = f"sort_array({_non_empty_intervals(branches)})"
    null_interval = f"CAST(NULL AS {INTERVAL_TYPE})"
    zero = f"named_struct('done', {_EMPTY_VIS}, 'cur', {null_interval})"
    extended = (
        "named_struct('start', _wl_acc.cur.`start`, "
        "'end', greatest(_wl_acc.cur.`end`, _wl_i.`end`))"
    )
    merge = (
        "(_wl_acc, _wl_i) -> CASE "
        "WHEN _wl_acc.cur IS NULL THEN named_struct('done', _wl_acc.done, 'cur', _wl_i) "
        f"WHEN _wl_i.`start` <= _wl_acc.cur.`end` THEN named_struct('done', _wl_acc.done, 'cur', {extended}) "
        "ELSE named_struct('done', concat(_wl_acc.done, array(_wl_acc.cur)), 'cur', _wl_i) END"
    )
    finish = (
        "_wl_acc -> CASE WHEN _wl_acc.cur IS NULL THEN _wl_acc.done "
        "ELSE concat(_wl_acc.done, array(_wl_acc.cur)) END"
    )
    return f"aggregate({sorted_intervals}, {zero}, {merge}, {finish})"


def render_tau(branches: Sequence[Branch], vis: str | None = None) -> str:
    """Spark SQL BIGINT: earliest visible instant, NEG_INF when never visible."""
    if vis is None:
        if not branches:
            return _NEG_INF_SQL
        if len(branches) == 1:
            _, start, _ = render_interval(branches[0])
            return f"CASE WHEN {render_non_empty(branches[0])} THEN {start} ELSE {_NEG_INF_SQL} END"
        # Merging never moves the earliest start, so skip it here.
        vis = _non_empty_intervals(branches)
    return f"coalesce(array_min(transform({vis}, _wl_i -> _wl_i.`start`)), {_NEG_INF_SQL})"


def vis_sql(plan: ReleasePlan) -> str:
    """Spark SQL of type ``ARRAY<STRUCT<start: BIGINT, end: BIGINT>>``: the plan's visibility
    as sorted, disjoint, merged half-open intervals in µs; an empty array when no W makes
    the policy TRUE."""
    return render_vis(plan.branches)


def tau_sql(plan: ReleasePlan, vis: str | None = None) -> str:
    """Spark SQL BIGINT: the earliest start of ``vis``, or NEG_INF when it is empty.

    ``vis`` may name a column (or expression) already holding `vis_sql`, so the bounds
    are not evaluated twice."""
    return render_tau(plan.branches, vis)


def single_interval_sql(plan: ReleasePlan) -> tuple[str, str, str] | None:
    """For a one-branch plan, Spark SQL ``(non_empty, start, end)``: the row is visible for
    W in [start, end) when ``non_empty`` is TRUE, and never otherwise. None for other plans
    (their visibility needs `vis_sql`'s array)."""
    if len(plan.branches) != 1:
        return None
    _, start, end = render_interval(plan.branches[0])
    return render_non_empty(plan.branches[0]), start, end


def _bound_text(bound: Bound, lower: bool) -> str:
    if lower:
        return f"{bound.expr}  ({'exclusive: +1µs' if bound.strict else 'inclusive'})"
    return f"{bound.expr}  ({'exclusive' if bound.strict else 'inclusive: +1µs'})"


def _side(label: str, bounds: Sequence[Bound], lower: bool, infinity: str) -> list[str]:
    if not bounds:
        return [f"  {label}: {infinity}"]
    if len(bounds) == 1:
        return [f"  {label}: {_bound_text(bounds[0], lower)}"]
    combiner = "greatest" if lower else "least"
    return [f"  {label}: {combiner} of"] + [f"    - {_bound_text(b, lower)}" for b in bounds]


def describe_plan(plan: ReleasePlan) -> str:
    """Readable branches, one block per branch; callers print the tier and policy above it."""
    if not plan.branches:
        return "never visible (no branch can be TRUE)"
    lines: list[str] = []
    for number, branch in enumerate(plan.branches, 1):
        lines.append(f"branch {number}")
        lines.append(f"  guard: {branch.guard if branch.guard is not None else 'TRUE'}")
        lines += _side("start", branch.lowers, lower=True, infinity="-inf")
        lines += _side("end", branch.uppers, lower=False, infinity="+inf")
    return "\n".join(lines)


def plan_to_json(plan: ReleasePlan) -> dict[str, Any]:
    """A JSON-ready dict: the policy, its branches, and the rendered Spark SQL."""

    def bounds(items: Sequence[Bound]) -> list[dict[str, Any]]:
        return [{"expr": b.expr, "strict": b.strict} for b in items]

    return {
        "tier": plan.tier,
        "policy": plan.policy,
        "branches": [
            {"guard": b.guard, "lowers": bounds(b.lowers), "uppers": bounds(b.uppers)}
            for b in plan.branches
        ],
        "vis_sql": vis_sql(plan),
        "tau_sql": tau_sql(plan),
    }
