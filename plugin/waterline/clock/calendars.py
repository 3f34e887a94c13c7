"""Business days and local times of day, for embargoes like "08:30 New York, next business day".

Holidays come from the ``holidays`` package (no hand-written lists); time zones
and DST from pendulum. Calendar names:

* a financial market code known to ``holidays``: ``"NYSE"`` / ``"XNYS"``,
  ``"XLON"``, ``"XNAS"``, ... (``holidays.financial_holidays``; includes
  unscheduled closures such as national days of mourning);
* a country, optionally with a subdivision: ``"US"``, ``"GB-ENG"``, ``"US-NY"``
  (``holidays.country_holidays``);
* ``"weekdays"``: Monday to Friday, no holidays.

Weekends are the calendar's own (``holidays`` knows e.g. Friday-Saturday
weekends), and countries' working Saturdays count as business days.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from functools import lru_cache

import holidays
import pendulum

from waterline.clock.durations import ClockError, from_us, to_us

WEEKDAYS = "weekdays"
_MAX_SEARCH_DAYS = 400  # no real calendar closes for a year; beyond that the input is wrong


@lru_cache(maxsize=64)
def business_calendar(name: str) -> holidays.HolidayBase | None:
    """The ``holidays`` calendar for ``name`` (None for ``"weekdays"``); cached per name."""
    key = name.strip()
    if key.lower() == WEEKDAYS:
        return None
    if key.upper() in holidays.list_supported_financial():
        return holidays.financial_holidays(key.upper())
    country, _, subdiv = key.partition("-")
    if country.upper() in holidays.list_supported_countries():
        try:
            return holidays.country_holidays(country.upper(), subdiv=subdiv.upper() or None)
        except NotImplementedError:
            raise ClockError(f"unknown calendar {name!r}: {country.upper()} has no subdivision {subdiv!r}") from None
    raise ClockError(
        f"unknown calendar {name!r}: expected a market code ('NYSE', 'XNYS', 'XLON', ...), "
        "a country ('US', 'GB-ENG', ...) or 'weekdays'"
    )


def is_business_day(day: date, calendar: str = "NYSE") -> bool:
    """True iff ``day`` is neither a weekend day nor a holiday of ``calendar``."""
    cal = business_calendar(calendar)
    if cal is None:
        return day.weekday() < 5
    return cal.is_working_day(day)


def parse_time_of_day(at: str) -> tuple[int, int, int]:
    """``"08:30"`` or ``"08:30:15"`` -> (hour, minute, second)."""
    match = re.fullmatch(r"\s*(\d{1,2}):(\d{2})(?::(\d{2}))?\s*", at) if isinstance(at, str) else None
    if match:
        hour, minute, second = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
        if hour < 24 and minute < 60 and second < 60:
            return hour, minute, second
    raise ClockError(f"invalid time of day {at!r}: expected 'HH:MM' or 'HH:MM:SS', e.g. '08:30'")


@lru_cache(maxsize=64)
def time_zone(tz: str) -> pendulum.Timezone:
    """The pendulum time zone called ``tz``, or a ClockError naming it."""
    try:
        return pendulum.timezone(tz)
    except Exception:
        raise ClockError(f"unknown time zone {tz!r}: expected an IANA name like 'America/New_York'") from None


def local_instants(day: date, hour: int, minute: int, second: int, tz: str) -> list[int]:
    """The instants (µs) at which the wall clock in ``tz`` shows ``day hour:minute:second``.

    Usually one. Two when the time repeats as DST ends (both, earliest first);
    when it is skipped as DST starts, the instant the gap moves it to (02:30 on
    a spring-forward day in New York -> 03:30 EDT), so the day still has one.
    """
    zone = time_zone(tz)
    wanted = (day.year, day.month, day.day, hour, minute, second)
    found: set[int] = set()
    for fold in (0, 1):
        dt = pendulum.datetime(*wanted, tz=zone, fold=fold)
        if (dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second) == wanted:
            found.add(to_us(dt))
    if not found:  # in the DST gap; pendulum's fold=1 moves forward by the gap
        found.add(to_us(pendulum.datetime(*wanted, tz=zone, fold=1)))
    return sorted(found)


def next_business_time(ts_us: int, at: str, tz: str, calendar: str = "NYSE") -> int:
    """The first instant at or after ``ts_us`` at which it is ``at`` local time in ``tz`` on a business day.

    At-or-after (not strictly after): an embargo "until the next 08:30 New York
    on an NYSE business day" for an event at exactly 08:30 opens at once.
    Correct across DST: 08:30 New York is 13:30Z in winter, 12:30Z in summer.
    """
    hour, minute, second = parse_time_of_day(at)
    zone = time_zone(tz)
    # Start a day early: a DST gap can push a wall time past midnight into ts's local day.
    day = from_us(ts_us).astimezone(zone).date() - timedelta(days=1)
    for _ in range(_MAX_SEARCH_DAYS):
        if is_business_day(day, calendar):
            for instant in local_instants(day, hour, minute, second, tz):
                if instant >= ts_us:
                    return instant
        day += timedelta(days=1)
    raise ClockError(f"calendar {calendar!r} has no business day within {_MAX_SEARCH_DAYS} days of {day}")


next_session_open = next_business_time
"""Alias used in docs/architecture.md."""
