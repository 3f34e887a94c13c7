"""Rendering: describe/to_json without Spark; vis_sql/tau_sql, a Spark typer and
sqlglot round-trip fidelity with Spark."""

from __future__ import annotations

import json

import pytest

from waterline.policy import PolicyError, compile_policy, describe_plan, plan_to_json, tau_sql, vis_sql
from waterline.policy.overflow import safe_bound_sql

NEG_INF, POS_INF = -(2**63), 2**63 - 1
T0 = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z
MINUTE = 60_000_000
SCHEMA = "event_time TIMESTAMP, embargo_until TIMESTAMP, status STRING, n BIGINT"
COLUMNS = {"event_time": "timestamp", "embargo_until": "timestamp", "status": "string", "n": "bigint"}


def test_describe_reads_like_a_plan():
    plan = compile_policy(
        "(status = 'final' AND event_time + INTERVAL 5 SECONDS <= WATERLINE()) OR status = 'preliminary'"
        " OR (event_time < WATERLINE() AND embargo_until <= WATERLINE() AND WATERLINE() <= embargo_until + INTERVAL 1 DAY)",
        tier="mixed",
    )
    text = describe_plan(plan)
    assert text.splitlines()[:2] == ["branch 1", "  guard: status = 'final'"]
    assert "branch 3" in text and "greatest of" in text and "(exclusive: +1µs)" in text
    assert "end: embargo_until + INTERVAL '1' DAY  (inclusive: +1µs)" in text
    assert "never visible" in describe_plan(compile_policy("FALSE"))


def test_to_json_is_json():
    data = plan_to_json(compile_policy("WATERLINE() BETWEEN event_time AND embargo_until", tier="t"))
    assert json.loads(json.dumps(data)) == data
    assert data["branches"] == [{"guard": None, "lowers": [{"expr": "event_time", "strict": False}],
                                 "uppers": [{"expr": "embargo_until", "strict": False}]}]
    assert data["tier"] == "t" and "vis_sql" in data and "tau_sql" in data


def _ts(us):
    return None if us is None else f"timestamp_micros({us})"


def _evaluate(spark, policy, rows):
    plan = compile_policy(policy, columns=COLUMNS)
    selects = [
        f"SELECT {_ts(e) or 'CAST(NULL AS TIMESTAMP)'} AS event_time, {_ts(u) or 'CAST(NULL AS TIMESTAMP)'} AS embargo_until, "
        f"{repr(s) if s else 'CAST(NULL AS STRING)'} AS status, CAST({n if n is not None else 'NULL'} AS BIGINT) AS n"
        for e, u, s, n in rows
    ]
    frame = spark.sql(" UNION ALL ".join(selects))
    result = []
    for row in frame.selectExpr(f"{vis_sql(plan)} AS vis", f"{tau_sql(plan)} AS tau").collect():
        result.append(([(i["start"], i["end"]) for i in row["vis"]], row["tau"]))
    return result


@pytest.mark.spark
def test_vis_and_tau_for_the_design_examples(spark):
    rows = [(T0, T0 + 60 * MINUTE, "final", None), (None, T0, "preliminary", None), (T0, None, None, None)]
    assert _evaluate(spark, "event_time + INTERVAL 15 MINUTES <= WATERLINE()", rows) == [
        ([(T0 + 15 * MINUTE, POS_INF)], T0 + 15 * MINUTE), ([], NEG_INF), ([(T0 + 15 * MINUTE, POS_INF)], T0 + 15 * MINUTE)]
    assert _evaluate(spark, "event_time <= WATERLINE() AND WATERLINE() < event_time + INTERVAL 1 DAY", rows)[0] == (
        [(T0, T0 + 1440 * MINUTE)], T0)
    mixed = "(status = 'final' AND event_time + INTERVAL 5 SECONDS <= WATERLINE()) OR status = 'preliminary'"
    assert _evaluate(spark, mixed, rows) == [
        ([(T0 + 5_000_000, POS_INF)], T0 + 5_000_000), ([(NEG_INF, POS_INF)], NEG_INF), ([], NEG_INF)]
    assert _evaluate(spark, "TRUE", rows)[0] == ([(NEG_INF, POS_INF)], NEG_INF)
    assert _evaluate(spark, "FALSE", rows)[0] == ([], NEG_INF)


@pytest.mark.spark
def test_strictness_and_merging(spark):
    rows = [(T0, T0 + 10 * MINUTE, None, None)]
    # Touching intervals merge: [T0, U] and (U, ...) cover [T0, inf).
    assert _evaluate(spark, "WATERLINE() BETWEEN event_time AND embargo_until OR embargo_until < WATERLINE()", rows) == [
        ([(T0, POS_INF)], T0)]
    # Disjoint: (-inf, T0) and (U, inf).
    assert _evaluate(spark, "WATERLINE() < event_time OR embargo_until < WATERLINE()", rows) == [
        ([(NEG_INF, T0), (T0 + 10 * MINUTE + 1, POS_INF)], NEG_INF)]
    # Overlapping and nested branches merge; empty branches vanish.
    policy = ("WATERLINE() BETWEEN event_time AND embargo_until OR (event_time + INTERVAL 1 MINUTE < WATERLINE() "
              "AND WATERLINE() < event_time + INTERVAL 2 MINUTES) OR (embargo_until < WATERLINE() AND WATERLINE() < event_time)")
    assert _evaluate(spark, policy, rows) == [([(T0, T0 + 10 * MINUTE + 1)], T0)]


@pytest.mark.spark
def test_spark_typer(spark):
    empty = spark.createDataFrame([], SCHEMA)

    def typer(expression: str) -> str:
        return empty.selectExpr(expression).schema.fields[0].dataType.simpleString()

    compile_policy("timestamp_millis(n) <= WATERLINE() AND status = 'x'", typer=typer)
    with pytest.raises(PolicyError, match=r"BIGINT, not TIMESTAMP.*timestamp_millis\(n \+ 1\)"):
        compile_policy("n + 1 <= WATERLINE()", typer=typer)
    with pytest.raises(PolicyError, match=r"boolean condition.*STRING"):
        compile_policy("concat(status, 'x') OR event_time <= WATERLINE()", typer=typer)
    with pytest.raises(PolicyError) as caught:
        compile_policy("no_such_function(event_time) <= WATERLINE()", typer=typer)
    assert "\n" not in str(caught.value) and "cannot resolve" in str(caught.value)


# Expressions sqlglot may rewrite when rendering; Spark must agree on every text.
ROUND_TRIP_BOUNDS = [
    "event_time + INTERVAL 15 MINUTES", "event_time + INTERVAL '1 2:03' DAY TO MINUTE",
    "event_time - INTERVAL 1 DAY 2 HOURS", "TIMESTAMP '2026-01-01 08:30:00'", "timestamp_millis(n)",
    "timestamp_seconds(n DIV 1000)", "to_timestamp('2026-01-01 08:30:00')", "date_trunc('HOUR', event_time)",
    "from_utc_timestamp(event_time, 'America/New_York')", "to_utc_timestamp(event_time, 'Europe/Paris')",
    "timestampadd(MINUTE, 5, event_time)", "make_timestamp(2026, 1, 1, 8, 30, 0)",
    "coalesce(embargo_until, event_time)", "nvl(embargo_until, event_time)", "ifnull(embargo_until, event_time)",
    "IF(status = 'final', event_time, embargo_until)", "greatest(event_time, embargo_until)",
    "CAST('2026-01-01T08:30:00Z' AS TIMESTAMP)", "event_time + make_dt_interval(0, 1)",
    "CAST(date_add(CAST(event_time AS DATE), 1) AS TIMESTAMP)",
]
ROUND_TRIP_CONDITIONS = [
    "status = 'final'", "status <=> 'final'", "status != 'final'", "status IN ('a', 'final')",
    "status LIKE 'fin%'", "status RLIKE '^f'", "status ILIKE 'FIN%'", "NOT status IS NULL",
    "n BETWEEN 1 AND 2000000000000", "n % 2 = 0", "n DIV 2 > 1", "length(status) > 2",
    "event_time < embargo_until", "hour(event_time) >= 0", "dayofweek(event_time) BETWEEN 2 AND 6",
    "date_format(event_time, 'HH:mm') >= '00:00'", "substring(status, 1, 3) = 'fin'",
    "array_contains(array('final'), status)", "exists(array(1, 2), x -> x > 1)", "status || 'x' = 'finalx'",
]


@pytest.mark.spark
def test_sqlglot_round_trip_keeps_spark_semantics(spark):
    frame = spark.sql(
        "SELECT * FROM VALUES "
        "(timestamp'2026-01-01 00:00:00', timestamp'2026-01-02 00:00:00', 'final', 1767225600000L), "
        "(timestamp'2026-03-08 06:30:00', CAST(NULL AS TIMESTAMP), 'draft', 7L), "
        "(CAST(NULL AS TIMESTAMP), timestamp'2026-01-01 00:00:00', CAST(NULL AS STRING), CAST(NULL AS BIGINT)) "
        "AS t(event_time, embargo_until, status, n)"
    )
    pairs = []
    for bound in ROUND_TRIP_BOUNDS:
        (branch,) = compile_policy(f"{bound} <= WATERLINE()", columns=COLUMNS).branches
        pairs.append((bound, branch.lowers[0].expr))
        # the overflow-safe rendering (try_ arithmetic) agrees wherever nothing overflows
        pairs.append((bound, safe_bound_sql(branch.lowers[0].expr)))
    for condition in ROUND_TRIP_CONDITIONS:
        (branch,) = compile_policy(f"({condition}) AND event_time <= WATERLINE()", columns=COLUMNS).branches
        pairs.append((condition, branch.guard))
    checks = [f"count_if(NOT (({a}) <=> ({b}))) AS c{i}" for i, (a, b) in enumerate(pairs)]
    counts = frame.selectExpr(*checks).collect()[0]
    differing = [pairs[i] for i in range(len(pairs)) if counts[f"c{i}"]]
    assert not differing, differing
