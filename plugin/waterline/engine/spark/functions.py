"""Spark SQL functions waterline adds, so policies can use business calendars.

``register_functions(spark, *sql_texts)`` creates, as session-scoped temporary
functions (idempotent; call it before compiling or evaluating SQL that uses them):

``wl_next_business_time(ts TIMESTAMP, hhmm STRING, tz STRING[, calendar STRING = 'NYSE']) -> TIMESTAMP``
    The first instant at or after ``ts`` at which the wall clock in ``tz``
    shows ``hhmm`` (``'08:30'`` or ``'08:30:00'``) on a business day of
    ``calendar`` (see :mod:`waterline.clock.calendars` for names: ``'NYSE'``,
    ``'XLON'``, ``'US'``, ``'GB-ENG'``, ``'weekdays'``...). DST-correct.
    Embargo example: ``wl_next_business_time(event_time, '08:30', 'America/New_York') <= WATERLINE()``.

``wl_is_business_day(d DATE[, calendar STRING = 'NYSE']) -> BOOLEAN``
    Whether the date is a business day of ``calendar``; for static guards.

Both equal :func:`waterline.clock.calendars.next_business_time` /
``is_business_day`` and are deterministic. NULL in, NULL out, so a policy
bound built on them is NULL, hence invisible, never released early.

Pure Spark SQL, no Python UDF: the same functions work in local mode, on a
standalone cluster (executors need no waterline install) and over Spark
Connect (which has no way to ship a Python function to a JVM-less client's
server without a Python worker set-up). Business days are generated here, in
the client, from the ``holidays`` package at registration time, as one string
of ``0``/``1`` per calendar and day over :data:`FIRST_DAY`..:data:`LAST_DAY`;
``locate('1', bits, day)`` then finds the next business day. Time zones and DST
come from Spark's own ``from_utc_timestamp`` (java.time rules), on BIGINT
microseconds so the session time zone never matters.

Outside the generated range the functions return NULL (nothing is released
early; an embargo beyond 2079 simply never opens until the range is extended).

Calendars: 'NYSE' (and its code 'XNYS') and 'weekdays' always; any other
calendar a registered SQL text names as a string literal (``'XLON'``, ``'US'``)
is added when that text is registered. A calendar that was not registered
fails the Spark job with a message naming it.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from functools import lru_cache
from typing import Iterable

from pyspark.sql import SparkSession

from waterline.clock.calendars import business_calendar, is_business_day
from waterline.clock.durations import ClockError

DEFAULT_CALENDAR = "NYSE"
ALWAYS = ("NYSE", "weekdays")
FIRST_DAY = date(1990, 1, 1)
LAST_DAY = date(2079, 12, 31)
_EPOCH_DAY = (FIRST_DAY - date(1970, 1, 1)).days  # day number of FIRST_DAY since 1970-01-01
_DAY_US = 86_400_000_000
_REGISTERED = "spark.waterline.functions.calendars"  # session conf: what this session has
_LITERAL = re.compile(r"'((?:[^'\\]|\\.)*)'")

FUNCTIONS = ("wl_next_business_time", "wl_is_business_day")
"""The public Spark SQL function names registered by :func:`register_functions`."""


def calendar_key(name: str) -> str:
    """The normalised name SQL compares with: trimmed, upper case (as `business_calendar` reads it)."""
    return name.strip().upper()


@lru_cache(maxsize=32)
def business_day_bits(calendar: str) -> str:
    """One character per day FIRST_DAY..LAST_DAY: '1' on a business day of ``calendar``."""
    business_calendar(calendar)  # unknown names raise ClockError here
    days = (LAST_DAY - FIRST_DAY).days + 1
    return "".join("1" if is_business_day(FIRST_DAY + timedelta(days=i), calendar) else "0" for i in range(days))


def calendars_named(texts: Iterable[str | None]) -> set[str]:
    """The calendar names among the string literals of SQL texts (keys, see `calendar_key`)."""
    found = set()
    for text in texts:
        for literal in _LITERAL.findall(text or ""):
            if not literal.strip() or len(literal) > 24 or "/" in literal or ":" in literal:
                continue
            try:
                business_calendar(literal)
            except ClockError:
                continue
            found.add(calendar_key(literal))
    return found


def register_functions(spark: SparkSession, *sql_texts: str | None, calendars: Iterable[str] = ()) -> tuple[str, ...]:
    """Register waterline's SQL functions in ``spark``; returns their names (see module doc).

    Calendars named as literals in ``sql_texts`` (policies, transforms) or in
    ``calendars`` are added to those the session already has; nothing is sent
    to Spark when the session has them all.
    """
    wanted = {calendar_key(c) for c in ALWAYS} | {calendar_key(c) for c in calendars} | calendars_named(sql_texts)
    for name in wanted:
        business_calendar(name)  # an explicit unknown calendar: ClockError naming it
    have = set(filter(None, (spark.conf.get(_REGISTERED, "") or "").split(",")))
    if wanted <= have:
        return FUNCTIONS
    names = sorted(wanted | have)
    for statement in _statements(names):
        spark.sql(statement)
    spark.conf.set(_REGISTERED, ",".join(names))
    return FUNCTIONS


def _bits_sql(names: list[str]) -> str:
    """CASE over the calendars: equal calendars (NYSE, XNYS) share one literal."""
    by_bits: dict[str, list[str]] = {}
    for name in names:
        by_bits.setdefault(business_day_bits(name), []).append(name)
    whens = " ".join(
        f"WHEN upper(trim(calendar)) IN ({', '.join(repr(n) for n in group)}) THEN '{bits}'"
        for bits, group in by_bits.items()
    )
    return (
        f"CASE {whens} ELSE raise_error(concat('calendar ''', calendar, ''' is not registered in this "
        f"Spark session (registered: {', '.join(names)}): name it as a string literal in the spec''s SQL')) END"
    )


def _statements(names: list[str]) -> list[str]:
    """The CREATE statements. `transform(array(x), v -> ...)[0]` binds v to x once: without
    such let-bindings, SQL function inlining copies each argument (the calendar's bits, tens
    of kilobytes) into every reference, and analysis time explodes."""
    first, last, day = _EPOCH_DAY, _EPOCH_DAY + (LAST_DAY - FIRST_DAY).days, _DAY_US

    def offset(i: str) -> str:  # tz's UTC offset (µs) at instant i (µs); ignores the session time zone
        return f"(unix_micros(from_utc_timestamp(timestamp_micros({i}), tz)) - ({i}))"

    def next_day(n: str) -> str:  # first business day (days since 1970-01-01) >= day n; NULL out of range
        pos = f"locate('1', s.bits, CAST(({n}) - {first} + 1 AS INT))"
        return f"CASE WHEN ({n}) >= {first} AND ({n}) <= {last} AND {pos} > 0 THEN {first} - 1 + {pos} END"

    # Instants at which the wall clock in tz shows w = d * day + tod: the ones with the offset in force
    # a day before or after that really show w (two in a repeated hour, first first); none in a DST gap,
    # where the wall time moves forward by the gap (the offset before it), as pendulum's fold=1 does
    # (waterline.clock.calendars.local_instants).
    before, after = f"w - {day}", f"w + {day}"
    wall = (
        f"transform(array(named_struct('w', w, 'ca', w - {offset(before)}, 'cb', w - {offset(after)})),"
        f" c -> CASE WHEN c.ca + {offset('c.ca')} = c.w OR c.cb + {offset('c.cb')} = c.w"
        f" THEN array(IF(c.ca + {offset('c.ca')} = c.w, c.ca, NULL), IF(c.cb + {offset('c.cb')} = c.w, c.cb, NULL))"
        f" ELSE array(c.ca) END)[0]"
    )
    # Business days b1 < b2 < b3 from the day before ts's local day hold the answer: a later
    # day's wall time is after ts, and a DST gap only moves a time forward.
    day0 = f"floor((s.t + {offset('s.t')}) / {day}) - 1"
    body = (
        f"transform(array(named_struct('bits', _wl_bits(calendar), 't', unix_micros(ts), 'tod', _wl_time_of_day(hhmm))),"
        f" s -> transform(array({next_day(day0)}),"
        f"  b1 -> transform(array({next_day('b1 + 1')}),"
        f"   b2 -> array_min(filter(flatten(transform(array(b1, b2, {next_day('b2 + 1')}),"
        f"    d -> transform(array(d * {day} + s.tod), w -> {wall})[0])), x -> x >= s.t)))[0])[0])[0]"
    )
    return [
        # The calendar's business days as '0'/'1' per day from FIRST_DAY.
        f"""CREATE OR REPLACE TEMPORARY FUNCTION _wl_bits(calendar STRING) RETURNS STRING DETERMINISTIC
        RETURN {_bits_sql(names)}""",
        # 'HH:MM' or 'HH:MM:SS' -> µs since midnight; a malformed text fails the job naming it.
        """CREATE OR REPLACE TEMPORARY FUNCTION _wl_time_of_day(hhmm STRING) RETURNS BIGINT DETERMINISTIC
        RETURN CASE
          WHEN hhmm RLIKE '^\\\\s*[0-9]{1,2}:[0-5][0-9](:[0-5][0-9])?\\\\s*$'
               AND CAST(split(trim(hhmm), ':')[0] AS INT) < 24
          THEN (CAST(split(trim(hhmm), ':')[0] AS BIGINT) * 3600
                + CAST(split(trim(hhmm), ':')[1] AS BIGINT) * 60
                + coalesce(CAST(try_element_at(split(trim(hhmm), ':'), 3) AS BIGINT), 0)) * 1000000
          ELSE raise_error(concat('invalid time of day ''', hhmm, ''': expected ''HH:MM'' or ''HH:MM:SS'', e.g. ''08:30'''))
        END""",
        f"""CREATE OR REPLACE TEMPORARY FUNCTION wl_next_business_time(
            ts TIMESTAMP, hhmm STRING, tz STRING, calendar STRING DEFAULT '{DEFAULT_CALENDAR}')
        RETURNS TIMESTAMP
        DETERMINISTIC
        COMMENT 'first hhmm local time in tz at or after ts on a business day of calendar'
        RETURN CASE WHEN ts IS NOT NULL AND hhmm IS NOT NULL AND tz IS NOT NULL AND calendar IS NOT NULL
          THEN timestamp_micros({body}) END""",
        f"""CREATE OR REPLACE TEMPORARY FUNCTION wl_is_business_day(
            d DATE, calendar STRING DEFAULT '{DEFAULT_CALENDAR}')
        RETURNS BOOLEAN
        DETERMINISTIC
        COMMENT 'whether d is a business day of calendar'
        RETURN CASE WHEN d >= DATE'{FIRST_DAY}' AND d <= DATE'{LAST_DAY}' AND calendar IS NOT NULL
          THEN substr(_wl_bits(calendar), datediff(d, DATE'{FIRST_DAY}') + 1, 1) = '1' END""",
    ]
