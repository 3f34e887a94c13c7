"""Fuzzing: any input gives a ReleasePlan or a one-line PolicyError, never another exception."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.policy import grammar
from waterline.policy import PolicyError, ReleasePlan, compile_policy, describe_plan, plan_to_json, tau_sql, vis_sql

TOKENS = [
    "WATERLINE()", "waterline", "WATERLINE(", "(", ")", ",", "AND", "OR", "NOT", "BETWEEN", "IN", "IS",
    "NULL", "TRUE", "FALSE", "CASE", "WHEN", "THEN", "ELSE", "END", "<", "<=", ">", ">=", "=", "==", "!=",
    "<>", "<=>", "+", "-", "*", "/", "%", "||", "!", "INTERVAL", "1", "15", "'x'", "'", '"', "`", "MINUTES",
    "DAY", "MONTH", "TO", "SECOND", "event_time", "embargo_until", "status", "n", "rand()", "now()",
    "CAST", "AS", "TIMESTAMP", "DATE", "SELECT", "FROM", ";", "->", "x", "exists", "coalesce", "::", "?",
    ":", "[", "]", "{", "}", ".", "\\", "--", "/*", "*/", "\n", "9223372036854775808", "1e309", "é",
]
COLUMNS = {"event_time": "timestamp", "embargo_until": "timestamp", "status": "string", "n": "bigint"}

token_soup = st.lists(st.sampled_from(TOKENS), max_size=25).map(" ".join)
mutated_policy = st.builds(
    lambda p, i, tok: p[:i] + tok + p[i:], grammar.policy, st.integers(0, 200), st.sampled_from(TOKENS)
)


def _compile_only_plan_or_policy_error(sql: str, **kwargs) -> None:
    try:
        plan = compile_policy(sql, **kwargs)
    except PolicyError as err:
        message = str(err)
        assert message and "\n" not in message
        return
    assert isinstance(plan, ReleasePlan)
    # Rendering must not fail for anything that compiled.
    assert vis_sql(plan) and tau_sql(plan) and describe_plan(plan)
    assert plan_to_json(plan)["policy"] == plan.policy


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_random_text(sql):
    _compile_only_plan_or_policy_error(sql)


@settings(max_examples=400, deadline=None)
@given(token_soup, st.booleans())
def test_token_soup(sql, with_columns):
    _compile_only_plan_or_policy_error(sql, tier="fuzz", columns=COLUMNS if with_columns else None)


@settings(max_examples=200, deadline=None)
@given(mutated_policy)
def test_mutated_valid_policies(sql):
    _compile_only_plan_or_policy_error(sql, columns=grammar.COLUMNS)


@settings(max_examples=200, deadline=None)
@given(grammar.policy)
def test_grammar_policies_compile(sql):
    try:
        compile_policy(sql, columns=grammar.COLUMNS)
    except PolicyError as err:
        assert "branches" in str(err)
