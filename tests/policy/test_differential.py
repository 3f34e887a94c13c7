"""The key acceptance test: the compiled plan agrees with Spark evaluating the policy itself.

For random rows (NULLs included), random policies from the allowed grammar and
many waterlines W (a grid with ±1µs around every grid point, plus ±1µs around
every endpoint the plan produced), "W is in vis_sql" must equal Spark's own
``coalesce(<policy with WATERLINE() := timestamp_micros(W)>, false)``. Cases are
batched: one query per example evaluates every (row, policy, W) triple.
"""

from __future__ import annotations

import os
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.policy import grammar
from waterline.engine.core import columns as C
from waterline.engine.tables.schedule import last_boundary_sql, schedule_columns, stored_vis_sql
from waterline.policy import PolicyError, compile_policy, tau_sql, vis_sql

pytestmark = pytest.mark.spark

POLICIES_PER_EXAMPLE = 24
EXAMPLES = int(os.environ.get("WATERLINE_POLICY_EXAMPLES", "6"))
_MARKER = re.compile(r"waterline\(\s*\)", re.IGNORECASE)
_FINITE = "_wl_e > -100000000000000000 AND _wl_e < 100000000000000000"

_totals = {"cases": 0, "policies": 0, "too_many_branches": 0, "seconds": 0.0}


def _with_waterline(policy: str, w_sql: str) -> str:
    return _MARKER.sub(f"timestamp_micros({w_sql})", policy)


def _compile(policies: list[str]):
    plans = []
    for policy in policies:
        try:
            plans.append((policy, compile_policy(policy, columns=grammar.COLUMNS)))
        except PolicyError as err:
            # Random AND/OR nesting may legitimately exceed the branch cap; anything else is a bug.
            assert "branches" in str(err), (policy, str(err))
            _totals["too_many_branches"] += 1
    return plans


def _rows_frame(spark, rows):
    ws = sorted({grammar.grid_us(k) + d for k in range(-grammar.GRID_STEPS, grammar.GRID_STEPS + 1)
                 for d in (-1, 0, 1)})
    frame = spark.createDataFrame(
        [(i, *row) for i, row in enumerate(rows)], "id INT, e BIGINT, u BIGINT, status STRING, n BIGINT"
    )
    return frame.selectExpr(
        "id", "timestamp_micros(e) AS event_time", "timestamp_micros(u) AS embargo_until", "status", "n",
        f"array({', '.join(map(str, ws))}) AS grid",
    )


def _evaluate(frame, plans):
    """One query: per row and policy, vis, tau, and the count of W where plan and Spark disagree.

    The Ws are the grid plus ±1µs around every finite endpoint of that row's vis.
    """
    with_vis = frame.selectExpr(
        "*", *(f"{vis_sql(plan)} AS vis_{k}" for k, (_, plan) in enumerate(plans))
    )
    outputs = ["id"]
    for k, (policy, plan) in enumerate(plans):
        endpoints = (
            f"flatten(transform(filter(flatten(transform(vis_{k}, _wl_v -> array(_wl_v.`start`, _wl_v.`end`))), "
            f"_wl_e -> {_FINITE}), _wl_e -> array(_wl_e - 1, _wl_e, _wl_e + 1)))"
        )
        got = f"exists(vis_{k}, _wl_v -> _wl_w >= _wl_v.`start` AND _wl_w < _wl_v.`end`)"
        want = f"coalesce(({_with_waterline(policy, '_wl_w')}), false)"
        outputs += [
            f"vis_{k}", f"{tau_sql(plan, f'vis_{k}')} AS tau_{k}",
            f"size(grid) + size({endpoints}) AS cases_{k}",
            f"size(filter(concat(grid, {endpoints}), _wl_w -> ({got}) <> ({want}))) AS bad_{k}",
        ]
    return with_vis.selectExpr(*outputs).collect()


def _check_held_encoding(frame, plans):
    """The held columns `schedule_columns` make, as `versions.tagged` applies them (a NULL array
    for one-branch plans), decode through `stored_vis_sql` to the plan's visibility, with its
    takeover and last boundary."""
    tiers = {f"p{k}": plan for k, (_, plan) in enumerate(plans)}
    first, later = schedule_columns(tiers)
    held = frame.withColumns(first)
    held = held.withColumns(later) if later else held
    checks = []
    for t, plan in tiers.items():
        want_vis = f"({vis_sql(plan)})"
        checks.append(
            f"coalesce(({stored_vis_sql(t)}) = {want_vis} AND {C.tau(t)} = ({tau_sql(plan)}) "
            f"AND {C.last(t)} = ({last_boundary_sql(want_vis)}), false) AS ok_{t}"
        )
    for row in held.selectExpr("id", *checks).collect():
        for k, (policy, _) in enumerate(plans):
            assert row[f"ok_p{k}"], f"held encoding disagrees with the plan: policy {policy!r}, row id {row['id']}"


def _check_structure(vis, tau, policy):
    starts_ends = [(i["start"], i["end"]) for i in vis]
    for start, end in starts_ends:
        assert start < end, (policy, starts_ends)
    for (_, end), (start, _) in zip(starts_ends, starts_ends[1:]):
        assert end < start, ("not sorted, disjoint and merged", policy, starts_ends)
    expected_tau = starts_ends[0][0] if starts_ends else -(2**63)
    assert tau == expected_tau, (policy, starts_ends, tau)


@pytest.fixture
def interpreted(spark):
    """Interpret instead of generating code: these one-off queries are mostly huge expressions."""
    key = "spark.sql.codegen.factoryMode"
    previous = spark.conf.get(key, None)
    spark.conf.set(key, "NO_CODEGEN")
    yield spark
    if previous is None:
        spark.conf.unset(key)
    else:
        spark.conf.set(key, previous)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(rows=grammar.rows, policies=st.lists(grammar.policy, min_size=POLICIES_PER_EXAMPLE,
                                            max_size=POLICIES_PER_EXAMPLE, unique=True))
def test_plan_agrees_with_spark(interpreted, rows, policies):
    spark = interpreted
    began = time.monotonic()
    plans = _compile(policies)
    if not plans:
        return
    frame = _rows_frame(spark, rows)
    cases = 0
    for row in _evaluate(frame, plans):
        for k, (policy, _) in enumerate(plans):
            _check_structure(row[f"vis_{k}"], row[f"tau_{k}"], policy)
            assert row[f"bad_{k}"] == 0, (
                f"plan disagrees with Spark: policy {policy!r}, row id {row['id']}, vis {row[f'vis_{k}']}"
            )
            cases += row[f"cases_{k}"]
    _check_held_encoding(frame, plans)
    _totals["cases"] += cases
    _totals["policies"] += len(plans)
    _totals["seconds"] += time.monotonic() - began


def test_report_differential_cases():
    """Runs after the property test (file order) and prints what it covered; run with -s."""
    print(
        f"\n[policy differential] {_totals['cases']} (row, policy, W) cases over "
        f"{_totals['policies']} policies in {_totals['seconds']:.1f}s, 0 disagreements "
        f"({_totals['too_many_branches']} policies skipped: over the branch cap)"
    )
    assert _totals["cases"] > 1000 or _totals["policies"] == 0
