"""The calendar helpers as Spark SQL functions agree with the Python ones."""

from __future__ import annotations

from datetime import date

import pytest

from waterline.clock import format_instant, is_business_day, next_business_time, parse_instant

CASES = [
    # (ts, hhmm, tz, calendar)
    ("2026-01-05T13:00:00Z", "08:30", "America/New_York", "NYSE"),
    ("2026-03-06T14:00:00Z", "08:30", "America/New_York", "NYSE"),  # -> first EDT Monday
    ("2026-10-30T13:00:00Z", "08:30", "America/New_York", "NYSE"),  # -> first EST Monday
    ("2026-04-02T20:00:00Z", "08:30", "America/New_York", "US"),  # Good Friday open for US
    ("2026-03-27T12:00:00Z", "08:30", "Europe/London", "XLON"),  # -> first BST Monday
    ("2026-01-05T13:30:00.000001Z", "08:30", "America/New_York", "weekdays"),
]


@pytest.mark.spark
def test_wl_functions_match_python(spark):
    from waterline.engine.functions import FUNCTIONS, register_functions

    assert register_functions(spark) == FUNCTIONS
    register_functions(spark)  # idempotent
    rows = ", ".join(
        f"(TIMESTAMP'{ts.replace('T', ' ').rstrip('Z')}', '{hhmm}', '{tz}', '{cal}', {i})"
        for i, (ts, hhmm, tz, cal) in enumerate(CASES)
    )
    # One query (Python UDF round trips are the slow part): explicit calendars per
    # row, plus the default-calendar form, NULL handling and wl_is_business_day.
    got = spark.sql(
        f"""
        SELECT i,
               unix_micros(wl_next_business_time(ts, hhmm, tz, cal)) AS due_us,
               unix_micros(wl_next_business_time(ts, hhmm, tz)) AS due_default_us,
               typeof(wl_next_business_time(ts, hhmm, tz)) AS type,
               wl_next_business_time(CAST(NULL AS TIMESTAMP), hhmm, tz) AS null_ts,
               wl_is_business_day(DATE'2026-04-03') AS good_friday_nyse,
               wl_is_business_day(CAST(ts AS DATE), 'US') AS business_day_us
        FROM VALUES {rows} AS t(ts, hhmm, tz, cal, i)
        """
    ).collect()
    got = sorted(got, key=lambda r: r.i)  # sorted here: ORDER BY would add a shuffle
    assert [r.i for r in got] == list(range(len(CASES)))
    for row, (ts, hhmm, tz, cal) in zip(got, CASES):
        ts_us = parse_instant(ts)
        expected = next_business_time(ts_us, hhmm, tz, cal)
        assert row.due_us == expected, (ts, tz, cal, format_instant(row.due_us), format_instant(expected))
        assert row.due_default_us == next_business_time(ts_us, hhmm, tz, "NYSE")
        assert row.type == "timestamp"
        assert row.null_ts is None
        assert row.good_friday_nyse is False
        assert row.business_day_us is is_business_day(date.fromisoformat(ts[:10]), "US")
    info = " ".join(r[0] for r in spark.sql("DESCRIBE FUNCTION EXTENDED wl_next_business_time").collect())
    assert "Deterministic: true" in info
