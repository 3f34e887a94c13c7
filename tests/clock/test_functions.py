"""The calendar helpers as Spark SQL functions agree with the Python ones."""

from __future__ import annotations

from datetime import date
from zoneinfo import ZoneInfo

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
    from waterline.engine.spark.functions import FUNCTIONS, register_functions

    assert register_functions(spark, calendars=("US", "XLON")) == FUNCTIONS
    register_functions(spark, "SELECT 'XLON'")  # idempotent
    rows = ", ".join(
        f"(TIMESTAMP'{ts.replace('T', ' ').rstrip('Z')}', '{hhmm}', '{tz}', '{cal}', {i})"
        for i, (ts, hhmm, tz, cal) in enumerate(CASES)
    )
    # One query: explicit calendars per
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


ZONES = ["America/New_York", "Europe/London", "Australia/Sydney", "America/Santiago", "Asia/Kolkata",
         "Pacific/Auckland", "America/Sao_Paulo", "Europe/Berlin", "UTC", "Asia/Tokyo"]
CALENDARS = ["NYSE", "XNYS", "US", "XLON", "weekdays", "GB-ENG"]
TIMES = ["08:30", "00:30", "02:30", "01:30:15", "03:00", "23:59:59", "16:00", "9:05"]


def _instants():
    """Instants 1995-2075, half of them near a DST change of some zone (the second Sunday
    of March, the last Sunday of March/October, the first Sunday of April/November)."""
    from hypothesis import strategies as st

    anywhere = st.integers(788_918_400_000_000, 3_345_062_400_000_000)
    near_dst = st.builds(
        lambda year, month, day, minute: parse_instant(f"{year}-{month:02d}-{day:02d}T00:00:00Z") + minute * 60_000_000,
        st.integers(1995, 2074), st.sampled_from([3, 4, 9, 10, 11]), st.integers(1, 28), st.integers(-1440, 2 * 1440),
    )
    return st.one_of(anywhere, near_dst)


@pytest.mark.spark
def test_wl_next_business_time_matches_python_over_many_instants_and_zones(spark):
    """Hypothesis draws batches of (instant, time of day, zone, calendar); one Spark query per batch."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from waterline.clock.durations import from_us
    from waterline.engine.spark.functions import register_functions

    register_functions(spark, calendars=CALENDARS)
    case = st.tuples(_instants(), st.sampled_from(TIMES), st.sampled_from(ZONES), st.sampled_from(CALENDARS))

    @settings(max_examples=6, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.lists(case, min_size=150, max_size=300))
    def check(cases):
        rows = ", ".join(f"({i}, {ts}, '{at}', '{tz}', '{cal}')" for i, (ts, at, tz, cal) in enumerate(cases))
        got = {
            r.i: (r.due, r.bday)
            for r in spark.sql(
                "SELECT i, unix_micros(wl_next_business_time(timestamp_micros(ts), at, tz, cal)) AS due, "
                "wl_is_business_day(to_date(from_utc_timestamp(timestamp_micros(ts), tz)), cal) AS bday "
                f"FROM VALUES {rows} AS t(i, ts, at, tz, cal)"
            ).collect()
        }
        for i, (ts, at, tz, cal) in enumerate(cases):
            expected = next_business_time(ts, at, tz, cal)
            assert got[i][0] == expected, (format_instant(ts), at, tz, cal, got[i][0] and format_instant(got[i][0]),
                                           format_instant(expected))
            local_day = from_us(ts).astimezone(ZoneInfo(tz)).date()
            assert got[i][1] is is_business_day(local_day, cal), (local_day, cal)

    check()


@pytest.mark.spark
def test_wl_functions_outside_the_generated_years_are_null_and_unknown_inputs_fail(spark):
    """NULL beyond the generated business days (nothing is released early); an unregistered
    calendar or a malformed time of day fails the query with a message naming it."""
    from waterline.engine.spark.functions import FIRST_DAY, LAST_DAY, register_functions

    register_functions(spark)
    row = spark.sql(
        f"SELECT wl_next_business_time(TIMESTAMP'{LAST_DAY.year + 1}-06-01 00:00:00', '08:30', 'UTC') AS after, "
        f"wl_next_business_time(TIMESTAMP'{FIRST_DAY.year - 1}-06-01 00:00:00', '08:30', 'UTC') AS before, "
        f"wl_is_business_day(DATE'{LAST_DAY.year + 1}-06-01') AS day_after"
    ).collect()[0]
    assert (row.after, row.before, row.day_after) == (None, None, None)
    with pytest.raises(Exception, match="calendar 'AU' is not registered"):
        spark.sql("SELECT wl_is_business_day(DATE'2026-01-05', 'AU')").collect()
    with pytest.raises(Exception, match="invalid time of day '8h30'"):
        spark.sql("SELECT wl_next_business_time(TIMESTAMP'2026-01-05 00:00:00', '8h30', 'UTC')").collect()
