"""Unit tests of the policy language: each allowed form, each rejection (no Spark)."""

from __future__ import annotations

import pytest

from waterline.errors import WaterlineError
from waterline.policy import (
    Bound, Branch, PolicyError, ReleasePlan, compile_policy, plan_from_spec_tiers, single_interval_sql, tau_sql,
)
from waterline.semantics import NEG_INF, POS_INF

COLUMNS = {"event_time": "timestamp", "embargo_until": "timestamp", "status": "string", "n": "bigint",
           "is_final": "boolean", "arr": "array<bigint>"}


def branches(sql: str, **kwargs) -> tuple[Branch, ...]:
    return compile_policy(sql, **kwargs).branches


def only(sql: str, **kwargs) -> Branch:
    (branch,) = branches(sql, **kwargs)
    return branch


# --- allowed forms ---------------------------------------------------------------------------

def test_true_and_false():
    assert branches("TRUE") == (Branch(None),)
    assert branches("FALSE") == ()
    # A static OR is a guard like any other static condition; Spark evaluates it.
    assert branches("false OR (TRUE)") == (Branch("FALSE OR (TRUE)"),)


def test_design_examples():
    assert only("event_time + INTERVAL 15 MINUTES <= WATERLINE()") == Branch(
        None, lowers=(Bound("event_time + INTERVAL '15' MINUTES", False),))
    assert only("embargo_until <= WATERLINE()") == Branch(None, lowers=(Bound("embargo_until", False),))
    assert only("event_time <= WATERLINE() AND WATERLINE() < event_time + INTERVAL 1 DAY") == Branch(
        None, lowers=(Bound("event_time", False),), uppers=(Bound("event_time + INTERVAL '1' DAY", True),))
    mixed = "(status = 'final' AND event_time + INTERVAL 5 SECONDS <= WATERLINE()) OR status = 'preliminary'"
    assert branches(mixed) == (
        Branch("status = 'final'", lowers=(Bound("event_time + INTERVAL '5' SECONDS", False),)),
        Branch("status = 'preliminary'"),
    )


@pytest.mark.parametrize("sql, lower, strict", [
    ("event_time <= WATERLINE()", True, False),
    ("event_time < WATERLINE()", True, True),
    ("WATERLINE() >= event_time", True, False),
    ("WATERLINE() > event_time", True, True),
    ("WATERLINE() < event_time", False, True),
    ("WATERLINE() <= event_time", False, False),
    ("event_time > WATERLINE()", False, True),
    ("event_time >= waterline()", False, False),
])
def test_each_orientation(sql, lower, strict):
    branch = only(sql)
    bounds = branch.lowers if lower else branch.uppers
    assert bounds == (Bound("event_time", strict),)
    assert (branch.uppers if lower else branch.lowers) == ()


@pytest.mark.parametrize("sql, expected", [
    ("WATERLINE() - INTERVAL 1 DAY < event_time", Branch(None, uppers=(Bound("event_time + INTERVAL '1' DAY", True),))),
    ("WATERLINE() + INTERVAL 15 MINUTES <= event_time",
     Branch(None, uppers=(Bound("event_time - INTERVAL '15' MINUTES", False),))),
    ("INTERVAL 1 HOUR + WATERLINE() > event_time", Branch(None, lowers=(Bound("event_time - INTERVAL '1' HOUR", True),))),
    ("(WATERLINE() + INTERVAL 1 HOUR) - INTERVAL 5 MINUTES >= event_time + INTERVAL 1 DAY",
     Branch(None, lowers=(Bound("(event_time + INTERVAL '1' DAY) - INTERVAL '1' HOUR + INTERVAL '5' MINUTES", False),))),
    ("WATERLINE() + INTERVAL 1 DAY 2 HOURS < event_time",
     Branch(None, uppers=(Bound("event_time - (INTERVAL '1' DAY + INTERVAL '2' HOURS)", True),))),
])
def test_intervals_move_to_the_other_side(sql, expected):
    assert only(sql) == expected


def test_between_forms():
    assert only("WATERLINE() BETWEEN event_time AND embargo_until") == Branch(
        None, lowers=(Bound("event_time", False),), uppers=(Bound("embargo_until", False),))
    assert only("event_time BETWEEN WATERLINE() AND embargo_until") == Branch(
        "event_time <= embargo_until", uppers=(Bound("event_time", False),))
    assert only("event_time BETWEEN embargo_until AND WATERLINE()") == Branch(
        "embargo_until <= event_time", lowers=(Bound("event_time", False),))
    assert only("event_time BETWEEN WATERLINE() - INTERVAL 1 HOUR AND WATERLINE()") == Branch(
        None, lowers=(Bound("event_time", False),), uppers=(Bound("event_time + INTERVAL '1' HOUR", False),))


def test_several_bounds_per_branch_and_dnf():
    branch = only("event_time <= WATERLINE() AND embargo_until < WATERLINE() AND WATERLINE() < event_time + INTERVAL 1 DAY")
    assert branch.lowers == (Bound("event_time", False), Bound("embargo_until", True))
    assert len(branch.uppers) == 1
    result = branches("(status = 'a' OR event_time <= WATERLINE()) AND (n > 1 OR embargo_until <= WATERLINE())")
    assert len(result) == 4
    assert result[0] == Branch("status = 'a' AND n > 1")


def test_static_parts_stay_whole():
    # Static ORs and NOTs are guards, not branches: no De Morgan needed, no blow-up.
    branch = only("(status = 'a' OR status = 'b') AND NOT (n > 1 OR n IS NULL) AND event_time <= WATERLINE()")
    assert branch.guard == "(status = 'a' OR status = 'b') AND NOT (n > 1 OR n IS NULL)"


def test_deterministic_functions_and_helpers_are_allowed():
    plan = compile_policy(
        "wl_next_business_time(event_time, '08:30', 'America/New_York') <= WATERLINE() "
        "AND exists(arr, x -> x > 1) AND timestamp_millis(n) < WATERLINE()",
        columns=COLUMNS,
    )
    (branch,) = plan.branches
    assert branch.guard == "EXISTS(arr, x -> x > 1)"
    assert [b.expr for b in branch.lowers] == [
        "WL_NEXT_BUSINESS_TIME(event_time, '08:30', 'America/New_York')", "TIMESTAMP_MILLIS(n)"]


def test_columns_match_case_insensitively():
    assert only("EVENT_TIME <= WATERLINE() AND Status = 'x'", columns=COLUMNS).guard == "Status = 'x'"


def test_branch_cap():
    many = " AND ".join(f"(event_time < WATERLINE() OR n > {i})" for i in range(7))
    with pytest.raises(PolicyError, match="more than 64 branches"):
        compile_policy(many)


def test_plan_from_spec_tiers_keeps_order_and_names_the_tier():
    plans = plan_from_spec_tiers({"realtime": "TRUE", "delayed": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"},
                                 columns=COLUMNS)
    assert list(plans) == ["realtime", "delayed"]
    assert all(isinstance(p, ReleasePlan) for p in plans.values())
    assert plans["delayed"].tier == "delayed"
    with pytest.raises(PolicyError, match=r"^tier bad: .*\"WATERLINE\(\) = n\""):
        plan_from_spec_tiers({"ok": "TRUE", "bad": "WATERLINE() = n"})


def test_typer_rejects_non_timestamp_bounds_and_non_boolean_conditions():
    types = {"event_time": "timestamp", "n": "bigint", "d": "date", "is_final": "boolean", "status": "string"}
    typer = types.__getitem__
    compile_policy("event_time <= WATERLINE() AND is_final", typer=typer)
    with pytest.raises(PolicyError, match=r'"n", which is BIGINT.*timestamp_millis\(n\)'):
        compile_policy("n <= WATERLINE()", typer=typer)
    with pytest.raises(PolicyError, match=r'"d", which is DATE.*CAST\(d AS TIMESTAMP\)'):
        compile_policy("WATERLINE() < d", typer=typer)
    with pytest.raises(PolicyError, match=r'boolean condition.*"status"'):
        compile_policy("status AND event_time <= WATERLINE()", typer=typer)
    with pytest.raises(PolicyError, match=r'cannot resolve "nope"'):
        compile_policy("nope <= WATERLINE()", typer=typer)


def test_sentinels_match_semantics():
    # The plan's minus/plus infinity are the oracle's: an unbounded interval, and the takeover of
    # a row never visible.
    _, start, end = single_interval_sql(compile_policy("TRUE"))
    assert (start, end) == (str(NEG_INF), str(POS_INF))
    assert tau_sql(compile_policy("FALSE")) == str(NEG_INF)


# --- rejections ----------------------------------------------------------------------------

REJECTIONS = [
    ("WATERLINE() = event_time", "equality", "WATERLINE() = event_time"),
    ("event_time != WATERLINE()", "equality", "event_time <> WATERLINE()"),
    ("WATERLINE() <> event_time", "equality", "WATERLINE() <> event_time"),
    ("WATERLINE() <=> event_time", "equality", "WATERLINE() IS NOT DISTINCT FROM event_time"),
    ("WATERLINE() IN (event_time)", "membership", "WATERLINE() IN (event_time)"),
    ("NOT (event_time <= WATERLINE())", "under NOT", "NOT (event_time <= WATERLINE())"),
    ("event_time NOT BETWEEN WATERLINE() AND embargo_until", "under NOT", "BETWEEN WATERLINE() AND embargo_until"),
    ("CASE WHEN status = 'a' THEN WATERLINE() END > event_time", "CASE", "CASE WHEN status = 'a' THEN WATERLINE() END"),
    ("IF(status = 'a', WATERLINE(), event_time) > event_time", "CASE or IF", "IF(status = 'a', WATERLINE(), event_time)"),
    ("coalesce(WATERLINE(), event_time) > event_time", "function arguments", "COALESCE(WATERLINE(), event_time)"),
    ("date_trunc('hour', WATERLINE()) > event_time", "function arguments", "WATERLINE()"),
    ("WATERLINE() * 2 > event_time", "INTERVAL", "WATERLINE() * 2"),
    ("WATERLINE() + n > event_time", "INTERVAL", "WATERLINE() + n"),
    ("INTERVAL 1 DAY - WATERLINE() > event_time", "INTERVAL", "INTERVAL '1' DAY - WATERLINE()"),
    ("WATERLINE() + INTERVAL 1 MONTH <= event_time", "month", "WATERLINE() + INTERVAL '1' MONTH"),
    ("WATERLINE() < WATERLINE() + INTERVAL 1 DAY", "both sides", "WATERLINE() < WATERLINE()"),
    ("WATERLINE()", "must be compared", "WATERLINE()"),
    ("WATERLINE() AND TRUE", "must be compared", "WATERLINE()"),
    ("WATERLINE(1) > event_time", "no arguments", "WATERLINE(1)"),
    ("rand() > 0.5", "non-deterministic", "RAND()"),
    ("randn(3) > 0", "non-deterministic", "RANDN(3)"),
    ("random() < 1", "non-deterministic", "RAND()"),
    ("uuid() = 'x'", "non-deterministic", "UUID()"),
    ("current_timestamp() <= WATERLINE()", "non-deterministic", "CURRENT_TIMESTAMP()"),
    ("current_timestamp > event_time", "non-deterministic", "CURRENT_TIMESTAMP()"),
    ("current_date() > DATE '2026-01-01'", "non-deterministic", "CURRENT_DATE"),
    ("now() <= WATERLINE()", "non-deterministic", "NOW()"),
    ("localtimestamp() > event_time", "non-deterministic", "LOCALTIMESTAMP"),
    ("unix_timestamp() > 1", "non-deterministic", "UNIX_TIMESTAMP("),
    ("size(shuffle(arr)) > 1", "non-deterministic", "SHUFFLE(arr)"),
    ("monotonically_increasing_id() > 1", "non-deterministic", "MONOTONICALLY_INCREASING_ID()"),
    ("spark_partition_id() = 0", "non-deterministic", "SPARK_PARTITION_ID()"),
    ("input_file_name() = 'x'", "non-deterministic", "INPUT_FILE_NAME()"),
    ("max(event_time) <= WATERLINE()", "aggregate", "MAX(event_time)"),
    ("status IN (SELECT 1)", "subqueries", "SELECT 1"),
    ("5 <= WATERLINE()", "timestamp_millis(5)", '"5", which is a number'),
    ("'2026-01-01' <= WATERLINE()", "TIMESTAMP '2026-01-01'", "'2026-01-01'"),
    ("DATE '2026-01-01' <= WATERLINE()", "DATE", "CAST('2026-01-01' AS DATE)"),
    ("unix_micros(event_time) <= WATERLINE()", "timestamp_micros(", "UNIX_MICROS(event_time)"),
    ("event_time > 1 AND", "syntax error", "event_time > 1 AND"),
    ("event_time <= WATERLINE(", "syntax error", "WATERLINE("),
    ("'unterminated", "syntax error", "'unterminated"),
    ("SELECT 1", "syntax error", "SELECT 1"),
    ("a; b", "single SQL expression", "a; b"),
    ("", "empty policy", "TRUE"),
    ("   \n ", "empty policy", "TRUE"),
    ("event_time", "boolean condition", "event_time"),
    ("n + 1", "boolean condition", "n + 1"),
    ("'yes'", "boolean condition", "'yes'"),
    ("status AND event_time <= WATERLINE()", "boolean condition", "status"),
    ("nope <= WATERLINE()", "unknown column", "nope"),
    ("event_time <= WATERLINE() AND Nope.x = 1", "unknown column", "Nope.x"),
    # a bound that adds an interval to a column known not to be a time names the column and its type
    ("status + INTERVAL 15 MINUTES <= WATERLINE()", "adds an interval to column status (STRING)",
     "status + INTERVAL '15' MINUTES"),
    ("WATERLINE() < (n - INTERVAL 1 DAY) + INTERVAL 2 HOURS", "adds an interval to column n (BIGINT)",
     "CAST(n AS TIMESTAMP)"),
    ("status <= WATERLINE()", "which is STRING, not TIMESTAMP", "CAST(status AS TIMESTAMP)"),
    # an impossible DATE or TIMESTAMP literal, found before Spark reads it
    ("TIMESTAMP '2026-02-30 10:00:00' <= WATERLINE()", "impossible date or time", "day is out of range for month"),
    ("event_time <= WATERLINE() AND WATERLINE() < DATE '2026-13-01'", "impossible date or time", "2026-13-01"),
]


@pytest.mark.parametrize("sql, reason, quoted", REJECTIONS)
def test_rejections_are_one_line_and_quote_the_fragment(sql, reason, quoted):
    with pytest.raises(PolicyError) as caught:
        compile_policy(sql, tier="t", columns=COLUMNS)
    message = str(caught.value)
    assert isinstance(caught.value, WaterlineError)
    assert "\n" not in message
    assert message.startswith("tier t: ")
    assert reason.lower() in message.lower(), message
    assert quoted in message, message


def test_interval_bounds_on_time_or_unknown_columns_and_spark_type_spellings_compile():
    columns = {**COLUMNS, "d": "date", "ntz": "TIMESTAMP_NTZ", "ltz": "TIMESTAMP_LTZ", "unknown": ""}
    for sql in ("event_time + INTERVAL 15 MINUTES <= WATERLINE()", "d + INTERVAL 1 DAY <= WATERLINE()",
                "ntz - INTERVAL 1 HOUR <= WATERLINE()", "ltz <= WATERLINE()", "unknown + INTERVAL 1 DAY <= WATERLINE()",
                "CAST(status AS TIMESTAMP_LTZ) <= WATERLINE()", "TIMESTAMP '2024-02-29 23:59:59' <= WATERLINE()"):
        compile_policy(sql, columns=columns)


def test_non_string_policy_is_a_policy_error():
    with pytest.raises(PolicyError, match="must be a string"):
        compile_policy(None)  # type: ignore[arg-type]


def test_deep_nesting_is_a_policy_error():
    with pytest.raises(PolicyError):
        compile_policy("(" * 5000 + "TRUE" + ")" * 5000)
