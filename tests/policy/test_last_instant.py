"""Bounds past Spark's last instant (year 294247) or before its first: the rendered plan
reads them as NULL, as `waterline.semantics` does (docs/semantics.md, "Bounds past the last
instant"), instead of stopping the query with ``long overflow``."""

from __future__ import annotations

import pytest

from tests.engine.model import MINUTE, POLICIES, python_vis
from waterline.policy import compile_policy, tau_sql, vis_sql
from waterline.policy.overflow import safe_bound_sql
from waterline.semantics import NEG_INF, POS_INF, branch_interval, representable, takeover, visibility

T0 = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z
HOUR = 60 * MINUTE

# Policies beyond tests.engine.model's, with their visibility in Python: subtraction near the
# first instant, several intervals, a bound moved off WATERLINE(), a strict expiry.
MORE = {
    "minus": ("event_time - INTERVAL 5 MINUTES <= WATERLINE()",
              lambda e, emb: [branch_interval(True, [(e - 5 * MINUTE, False)], [])]),
    "two": ("event_time + INTERVAL 1 HOUR 30 MINUTES < WATERLINE()",
            lambda e, emb: [branch_interval(True, [(e + 90 * MINUTE, True)], [])]),
    "moved": ("WATERLINE() - INTERVAL 2 HOURS < event_time",
              lambda e, emb: [branch_interval(True, [], [(e + 2 * HOUR, True)])]),
    "between": ("WATERLINE() BETWEEN embargo_until AND event_time + INTERVAL 1 HOUR",
                lambda e, emb: [branch_interval(True, [(emb, False)], [(e + HOUR, False)])]),
}
EVENT_TIMES = [T0, POS_INF, POS_INF - 10 * MINUTE, POS_INF - 10 * MINUTE + 1, POS_INF - 30 * MINUTE - 1,
               POS_INF - 2 * HOUR, NEG_INF, NEG_INF + 5 * MINUTE - 1, NEG_INF + 5 * MINUTE]


def _rows() -> list[dict]:
    return [{"id": i, "event_time": e, "status": status, "embargo_until": emb, "v": "x"}
            for i, (e, status, emb) in enumerate(
                (e, status, emb) for e in EVENT_TIMES for status in ("final", "prelim")
                for emb in (T0, POS_INF))]


def _expected(tier: str, row: dict) -> tuple:
    if tier in POLICIES:
        return python_vis(tier, row)
    return visibility(MORE[tier][1](row["event_time"], row["embargo_until"]))


@pytest.mark.spark
def test_bounds_past_the_last_instant_are_null_as_in_semantics(spark):
    policies = {**POLICIES, **{tier: sql for tier, (sql, _) in MORE.items()}}
    plans = {tier: compile_policy(sql, tier=tier) for tier, sql in policies.items()}
    rows = _rows()
    frame = spark.createDataFrame([(r["id"], r["event_time"], r["status"], r["embargo_until"]) for r in rows],
                                  "id INT, e BIGINT, status STRING, emb BIGINT").selectExpr(
        "id", "timestamp_micros(e) AS event_time", "status", "timestamp_micros(emb) AS embargo_until")
    selects = [f"{vis_sql(plan)} AS vis_{tier}" for tier, plan in plans.items()]
    selects += [f"{tau_sql(plan)} AS tau_{tier}" for tier, plan in plans.items()]
    got = {row["id"]: row for row in frame.selectExpr("id", *selects).collect()}
    overflowing = 0
    for row in rows:
        for tier in plans:
            want = _expected(tier, row)
            vis = tuple((i["start"], i["end"]) for i in got[row["id"]][f"vis_{tier}"])
            assert vis == want, (tier, row)
            assert got[row["id"]][f"tau_{tier}"] == takeover(want), (tier, row)
        overflowing += row["event_time"] > POS_INF - 2 * HOUR or row["event_time"] < NEG_INF + 5 * MINUTE
    assert overflowing >= 8  # rows whose bounds leave the range in several tiers


def test_safe_bounds_use_try_functions():
    assert safe_bound_sql("event_time + INTERVAL '10' MINUTES") == "TRY_ADD(event_time, INTERVAL '10' MINUTES)"
    assert safe_bound_sql("e - INTERVAL '1' DAY - INTERVAL '2' HOURS") == (
        "TRY_SUBTRACT(TRY_SUBTRACT(e, INTERVAL '1' DAY), INTERVAL '2' HOURS)")
    assert safe_bound_sql("embargo_until") == "embargo_until"
    assert safe_bound_sql("timestamp_millis(n * 1000)") == "TIMESTAMP_MILLIS(TRY_MULTIPLY(n, 1000))"


def test_semantics_reads_unrepresentable_bounds_as_null():
    assert representable(POS_INF) == POS_INF and representable(NEG_INF) == NEG_INF
    assert representable(POS_INF + 1) is None and representable(NEG_INF - 1) is None
    assert representable(None) is None
    # a visibility bound past the last instant: never due; an expiry bound: the row is hidden
    assert branch_interval(True, [(POS_INF + MINUTE, False)], []) is None
    assert branch_interval(True, [(T0, False)], [(POS_INF + MINUTE, True)]) is None
    # the last instant itself is representable: W can never pass it, so it starts nothing
    assert branch_interval(True, [(POS_INF, False)], []) is None
    assert branch_interval(True, [], [(POS_INF, False)]) == (NEG_INF, POS_INF)
