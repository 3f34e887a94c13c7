"""Durations, instants and their µs conversions."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.semantics.examples import property_settings
from waterline.clock import (
    ClockError,
    TimeParseError,
    format_duration,
    format_instant,
    from_us,
    parse_duration,
    parse_instant,
    to_us,
)
from waterline.errors import WaterlineError
from waterline.semantics import NEG_INF, POS_INF


@pytest.mark.parametrize(
    "text, expected",
    [
        ("30 seconds", timedelta(seconds=30)),
        ("15 minutes", timedelta(minutes=15)),
        ("1 day", timedelta(days=1)),
        ("2h", timedelta(hours=2)),
        ("1h30m", timedelta(minutes=90)),
        ("1 hour, 30 minutes", timedelta(minutes=90)),
        ("500ms", timedelta(milliseconds=500)),
        ("1.5 s", timedelta(seconds=1.5)),
        ("INTERVAL 15 MINUTES", timedelta(minutes=15)),
        ("2 weeks", timedelta(days=14)),
        ("PT15M", timedelta(minutes=15)),
        ("P1DT2H", timedelta(days=1, hours=2)),
        ("0", timedelta(0)),
        ("45", timedelta(seconds=45)),
        (30, timedelta(seconds=30)),
        (timedelta(minutes=1), timedelta(minutes=1)),
    ],
)
def test_parse_duration(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "15 fortnights", "3 months", "1 year", "-5s", "15 minutes foo", "P1M", "h"])
def test_parse_duration_errors_name_the_text(text):
    with pytest.raises(ValueError) as err:
        parse_duration(text)
    assert repr(text) in str(err.value)
    assert isinstance(err.value, (TimeParseError, ClockError, WaterlineError))
    assert "\n" not in str(err.value)


JAN5 = to_us(datetime(2026, 1, 5, 13, 30, tzinfo=timezone.utc))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-01-05T13:30:00Z", JAN5),
        ("2026-01-05T13:30:00z", JAN5),
        ("2026-01-05 13:30", JAN5),
        ("2026-01-05T13:30:00+00:00", JAN5),
        ("2026-01-05T14:30:00+01:00", JAN5),
        ("2026-01-05T13:30:00.000001Z", JAN5 + 1),
        ("2026-01-05", JAN5 - (13 * 60 + 30) * 60_000_000),
        ("now", 42),
        ("now - 1 minute", 42 - 60_000_000),
        ("now+2h", 42 + 7_200_000_000),
    ],
)
def test_parse_instant(text, expected):
    assert parse_instant(text, now_us=42) == expected


def test_parse_instant_in_a_time_zone_and_now_callable():
    assert parse_instant("2026-01-05 08:30", tz="America/New_York") == JAN5
    # Spring-forward gap: 02:30 does not exist in New York, moves to 03:30 EDT (07:30Z).
    assert format_instant(parse_instant("2026-03-08 02:30", tz="America/New_York")) == "2026-03-08T07:30:00Z"
    # Fall-back: 01:30 happens twice; the first occurrence (EDT, 05:30Z).
    assert format_instant(parse_instant("2026-11-01 01:30", tz="America/New_York")) == "2026-11-01T05:30:00Z"
    assert parse_instant("now", now_us=lambda: 7) == 7


@pytest.mark.parametrize("text", ["", "tomorrow", "2026-13-01", "05/01/2026", "now - soon"])
def test_parse_instant_errors_name_the_text(text):
    with pytest.raises(ValueError) as err:
        parse_instant(text, now_us=0)
    assert repr(text.strip()) in str(err.value) or repr(text) in str(err.value)


def test_format_instant():
    assert format_instant(JAN5) == "2026-01-05T13:30:00Z"
    assert format_instant(JAN5 + 1) == "2026-01-05T13:30:00.000001Z"
    assert format_instant(NEG_INF) == "-inf" and format_instant(POS_INF) == "+inf"
    assert format_duration(90 * 60_000_000) == "1h 30m"
    assert format_duration(250_000) == "250ms"
    assert format_duration(0) == "0s"


@property_settings()
@given(st.integers(to_us(datetime(1, 1, 1)), to_us(datetime(9999, 12, 31, 23, 59, 59, 999999))))
def test_instant_round_trips_exactly(us):
    assert to_us(from_us(us)) == us
    assert parse_instant(format_instant(us)) == us
