"""waterline.policy: compile a tier's SQL policy into a release plan.

A policy is a Spark SQL boolean expression over the feed's columns and the
marker ``WATERLINE()``. :func:`compile_policy` removes the marker and yields a
:class:`ReleasePlan`: guarded branches of bounds whose Spark SQL rendering
(`vis_sql`/`tau_sql`, the render pass) gives each row's visibility intervals in µs.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

from waterline.policy.normalize import MAX_BRANCHES, to_branches
from waterline.policy.parse import parse_policy, quote, validate
from waterline.policy.plan import Bound, Branch, PolicyError, ReleasePlan
from waterline.policy.render import describe_plan, plan_to_json, single_interval_sql, tau_sql, vis_sql

__all__ = [
    "MAX_BRANCHES", "Bound", "Branch", "PolicyError", "ReleasePlan",
    "check_policy_columns", "compile_policy", "describe_plan", "plan_from_spec_tiers", "plan_to_json",
    "single_interval_sql", "tau_sql", "vis_sql",
]


def compile_policy(sql: str, *, tier: str | None = None,
                   columns: Mapping[str, str] | None = None,
                   typer: Callable[[str], str] | None = None) -> ReleasePlan:
    """Compile policy ``sql`` into a :class:`ReleasePlan`.

    ``columns`` (name -> Spark type) enables the unknown-column check and
    static type checks; ``typer`` (Spark SQL expression -> Spark type name)
    lets Spark's analyzer type bounds and conditions. Raises :class:`PolicyError`
    (one line, prefixed ``tier <name>: `` when ``tier`` is given) and nothing else.
    """
    prefix = f"tier {tier}: " if tier is not None else ""
    try:
        tree = parse_policy(sql)
        validate(tree, columns)
        branches = to_branches(tree, columns, typer)
        return ReleasePlan(policy=sql.strip(), branches=branches, tier=tier)
    except PolicyError as err:
        if not prefix:
            raise
        raise PolicyError(prefix + str(err)) from err
    except RecursionError:
        raise PolicyError(f"{prefix}policy is nested too deeply: {quote(str(sql))}") from None
    except Exception as err:  # never a traceback for a policy, whatever sqlglot does
        raise PolicyError(
            f"{prefix}cannot compile policy {quote(str(sql))}: {type(err).__name__}: {err}"
        ) from err


def check_policy_columns(sql: str, columns: "Iterable[str]", *, tier: str | None = None) -> None:
    """Refuse a policy naming a column not among ``columns`` (names only: for when the
    output's columns are known without Spark but their types are not)."""
    try:
        validate(parse_policy(sql), {name: "" for name in columns})
    except PolicyError as err:
        raise PolicyError((f"tier {tier}: " if tier is not None else "") + str(err)) from err


def plan_from_spec_tiers(tiers: Mapping[str, str], columns: Mapping[str, str] | None = None,
                         typer: Callable[[str], str] | None = None) -> dict[str, ReleasePlan]:
    """Compile every tier's policy, keeping the spec's order; the first bad tier raises."""
    return {
        name: compile_policy(policy, tier=name, columns=columns, typer=typer)
        for name, policy in tiers.items()
    }
