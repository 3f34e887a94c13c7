"""Business calendars across DST: checked day by day against independent computations.

The expected instants are computed two independent ways: with pendulum
(local date + wall time -> instant) and from the statutory DST rules written
out here (US: second Sunday of March to first Sunday of November at 02:00
local; UK: last Sunday of March to last Sunday of October at 01:00 UTC).
Business days come straight from the ``holidays`` package.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import holidays
import pendulum
import pytest

from waterline.clock import (
    ClockError,
    format_instant,
    is_business_day,
    local_instants,
    next_business_time,
    next_session_open,
    parse_instant,
    to_us,
)

HOUR = 3_600_000_000
MINUTE = 60_000_000


def _nth_sunday(year: int, month: int, n: int) -> date:
    first = date(year, month, 1)
    return first + timedelta(days=(6 - first.weekday()) % 7 + 7 * (n - 1))


def _last_sunday(year: int, month: int) -> date:
    last = date(year + (month == 12), month % 12 + 1, 1) - timedelta(days=1)
    return last - timedelta(days=(last.weekday() - 6) % 7)


def new_york_offset_hours(utc_us: int) -> int:
    """UTC offset of New York at an instant, from the US rule (not from a tz database)."""
    y = datetime.fromtimestamp(utc_us / 1e6, tz=timezone.utc).year
    start = to_us(datetime.combine(_nth_sunday(y, 3, 2), datetime.min.time())) + 7 * HOUR  # 02:00 EST
    end = to_us(datetime.combine(_nth_sunday(y, 11, 1), datetime.min.time())) + 6 * HOUR  # 02:00 EDT
    return -4 if start <= utc_us < end else -5


def london_offset_hours(utc_us: int) -> int:
    """UTC offset of London at an instant, from the UK rule."""
    y = datetime.fromtimestamp(utc_us / 1e6, tz=timezone.utc).year
    start = to_us(datetime.combine(_last_sunday(y, 3), datetime.min.time())) + 1 * HOUR
    end = to_us(datetime.combine(_last_sunday(y, 10), datetime.min.time())) + 1 * HOUR
    return 1 if start <= utc_us < end else 0


ZONES = {
    # tz: (calendar name, holidays calendar, offset rule)
    "America/New_York": ("NYSE", holidays.financial_holidays("NYSE"), new_york_offset_hours),
    "Europe/London": ("XLON", holidays.financial_holidays("XLON"), london_offset_hours),
}


def wall_to_utc_by_rule(day: date, hh: int, mm: int, ss: int, us: int, offset_rule) -> int:
    """Local wall time -> instant with the rule; valid for times outside transition hours."""
    naive = to_us(datetime(day.year, day.month, day.day, hh, mm, ss, us))
    matches = [naive - h * HOUR for h in (-5, -4, 0, 1) if offset_rule(naive - h * HOUR) == h]
    assert len(matches) == 1, (day, hh, mm)
    return matches[0]


# Times of day around the 08:30 cut-off, far from the 01:00-03:00 transition hours.
TIMES_OF_DAY = [(0, 0, 0, 0), (8, 29, 59, 999999), (8, 30, 0, 0), (8, 30, 0, 1), (12, 0, 0, 0), (23, 59, 59, 0)]
DAYS = [date(2025, 1, 1) + timedelta(days=i) for i in range((date(2027, 1, 1) - date(2025, 1, 1)).days)]


@pytest.mark.parametrize("tz", sorted(ZONES))
def test_next_business_0830_agrees_with_pendulum_and_dst_rules_every_day_for_two_years(tz):
    calendar, holiday_list, offset_rule = ZONES[tz]
    checked = 0
    for day in DAYS:
        for hh, mm, ss, us in TIMES_OF_DAY:
            ts = wall_to_utc_by_rule(day, hh, mm, ss, us, offset_rule)
            # Expected day: today if a business day and not yet past 08:30, else the next business day.
            target = day if (hh, mm, ss, us) <= (8, 30, 0, 0) else day + timedelta(days=1)
            while target.weekday() >= 5 or target in holiday_list:
                target += timedelta(days=1)
            by_pendulum = to_us(pendulum.datetime(target.year, target.month, target.day, 8, 30, tz=tz))
            by_rule = wall_to_utc_by_rule(target, 8, 30, 0, 0, offset_rule)
            assert by_pendulum == by_rule
            got = next_business_time(ts, "08:30", tz, calendar=calendar)
            assert got == by_rule, (tz, day, (hh, mm, ss, us), format_instant(got), format_instant(by_rule))
            checked += 1
    assert checked == len(DAYS) * len(TIMES_OF_DAY)


@pytest.mark.parametrize(
    "ts, tz, calendar, expected",
    [
        # 08:30 New York is 13:30Z in winter, 12:30Z in summer.
        ("2026-01-05T13:00:00Z", "America/New_York", "NYSE", "2026-01-05T13:30:00Z"),
        ("2026-07-06T12:00:00Z", "America/New_York", "NYSE", "2026-07-06T12:30:00Z"),
        # Friday 2026-03-06 after the cut-off -> Monday 03-09, the first EDT business day.
        ("2026-03-06T14:00:00Z", "America/New_York", "NYSE", "2026-03-09T12:30:00Z"),
        # Friday 2026-10-30 after the cut-off -> Monday 11-02, the first EST business day.
        ("2026-10-30T13:00:00Z", "America/New_York", "NYSE", "2026-11-02T13:30:00Z"),
        # Good Friday: NYSE closed, US federal calendar open.
        ("2026-04-02T20:00:00Z", "America/New_York", "NYSE", "2026-04-06T12:30:00Z"),
        ("2026-04-02T20:00:00Z", "America/New_York", "US", "2026-04-03T12:30:00Z"),
        # Columbus Day: US federal holiday, NYSE open.
        ("2026-10-12T00:00:00Z", "America/New_York", "NYSE", "2026-10-12T12:30:00Z"),
        ("2026-10-12T00:00:00Z", "America/New_York", "US", "2026-10-13T12:30:00Z"),
        # National day of mourning (unscheduled NYSE closure), 2025-01-09.
        ("2025-01-08T20:00:00Z", "America/New_York", "NYSE", "2025-01-10T13:30:00Z"),
        ("2025-01-08T20:00:00Z", "America/New_York", "weekdays", "2025-01-09T13:30:00Z"),
        # Easter Monday closes London, not New York.
        ("2026-04-02T20:00:00Z", "Europe/London", "XLON", "2026-04-07T07:30:00Z"),
        ("2026-01-05T09:00:00Z", "Europe/London", "GB-ENG", "2026-01-06T08:30:00Z"),
        # Exactly at the cut-off: at-or-after returns it.
        ("2026-01-05T13:30:00Z", "America/New_York", "NYSE", "2026-01-05T13:30:00Z"),
        ("2026-01-05T13:30:00.000001Z", "America/New_York", "NYSE", "2026-01-06T13:30:00Z"),
    ],
)
def test_next_business_time_examples(ts, tz, calendar, expected):
    assert format_instant(next_business_time(parse_instant(ts), "08:30", tz, calendar)) == expected


def test_wall_times_inside_dst_transitions():
    # Fall back: 01:30 occurs twice in New York on 2026-11-01, both are returned, earliest first.
    assert [format_instant(x) for x in local_instants(date(2026, 11, 1), 1, 30, 0, "America/New_York")] == [
        "2026-11-01T05:30:00Z",
        "2026-11-01T06:30:00Z",
    ]
    # Spring forward: 02:30 does not exist; it moves to 03:30 EDT.
    assert [format_instant(x) for x in local_instants(date(2026, 3, 8), 2, 30, 0, "America/New_York")] == [
        "2026-03-08T07:30:00Z"
    ]


def test_next_business_time_on_transition_business_days():
    # Israel changes clocks on business days (Sunday is one; the weekend is Fri-Sat).
    # 2026-10-25 01:30 happens twice (IDT 22:30Z, IST 23:30Z); between them the next one is the second.
    between = parse_instant("2026-10-24T22:45:00Z")
    assert format_instant(next_business_time(between, "01:30", "Asia/Jerusalem", "IL")) == "2026-10-24T23:30:00Z"
    before = parse_instant("2026-10-24T20:00:00Z")
    assert format_instant(next_business_time(before, "01:30", "Asia/Jerusalem", "IL")) == "2026-10-24T22:30:00Z"
    # 2026-03-27 (a Friday, so use "weekdays"): 02:30 is skipped; the day's 02:30 is 03:30 IDT = 00:30Z.
    thursday = parse_instant("2026-03-26T20:00:00Z")
    assert format_instant(next_business_time(thursday, "02:30", "Asia/Jerusalem", "weekdays")) == "2026-03-27T00:30:00Z"


def test_is_business_day_and_alias():
    assert not is_business_day(date(2026, 4, 3), "NYSE")  # Good Friday
    assert is_business_day(date(2026, 4, 3), "US")
    assert not is_business_day(date(2026, 1, 3), "weekdays")  # Saturday
    assert next_session_open is next_business_time


@pytest.mark.parametrize(
    "args, fragment",
    [
        ((0, "8h30", "America/New_York", "NYSE"), "'8h30'"),
        ((0, "24:00", "America/New_York", "NYSE"), "'24:00'"),
        ((0, "08:30", "Mars/Base", "NYSE"), "'Mars/Base'"),
        ((0, "08:30", "America/New_York", "MOON"), "'MOON'"),
        ((0, "08:30", "America/New_York", "US-ZZ"), "'ZZ'"),
    ],
)
def test_errors_name_the_bad_input(args, fragment):
    with pytest.raises(ClockError) as err:
        next_business_time(*args)
    assert fragment in str(err.value)
