"""Spark SQL functions waterline adds, so policies can use business calendars.

``register_functions(spark)`` creates, as session-scoped temporary functions
(idempotent; call it once per session before compiling or evaluating policies):

``wl_next_business_time(ts TIMESTAMP, hhmm STRING, tz STRING[, calendar STRING = 'NYSE']) -> TIMESTAMP``
    The first instant at or after ``ts`` at which the wall clock in ``tz``
    shows ``hhmm`` (``'08:30'`` or ``'08:30:00'``) on a business day of
    ``calendar`` (see :mod:`waterline.clock.calendars` for names: ``'NYSE'``,
    ``'XLON'``, ``'US'``, ``'GB-ENG'``, ``'weekdays'``...). DST-correct.
    Embargo example: ``wl_next_business_time(event_time, '08:30', 'America/New_York') <= WATERLINE()``.

``wl_is_business_day(d DATE[, calendar STRING = 'NYSE']) -> BOOLEAN``
    Whether the date is a business day of ``calendar``; for static guards.

All are deterministic and return NULL when any argument is NULL (so a policy
bound built on them is NULL, hence invisible, never released early). An
unknown time zone, calendar or malformed ``hhmm`` fails the Spark job with the
:class:`waterline.clock.ClockError` message.

Why the SQL wrappers: Python UDFs receive and return TIMESTAMPs as naive
datetimes in the *Python worker's* local time zone, not Spark's session time
zone. Passing BIGINT microseconds (``unix_micros`` / ``timestamp_micros``)
across the Python boundary is exact whatever the machine's TZ is.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING

from waterline.clock.calendars import is_business_day, next_business_time

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_CALENDAR = "NYSE"

FUNCTIONS = ("wl_next_business_time", "wl_is_business_day")
"""The public Spark SQL function names registered by :func:`register_functions`."""


def _next_business_time_us(ts_us: int | None, hhmm: str | None, tz: str | None, calendar: str | None) -> int | None:
    if ts_us is None or hhmm is None or tz is None or calendar is None:
        return None
    return next_business_time(ts_us, hhmm, tz, calendar)


def _is_business_day(day: _dt.date | None, calendar: str | None) -> bool | None:
    if day is None or calendar is None:
        return None
    return is_business_day(day, calendar)


def register_functions(spark: "SparkSession") -> tuple[str, ...]:
    """Register waterline's SQL functions in ``spark``; returns their names (see module doc)."""
    from pyspark.sql.types import BooleanType, LongType

    spark.udf.register("_wl_next_business_time_us", _next_business_time_us, LongType())
    spark.udf.register("_wl_is_business_day", _is_business_day, BooleanType())
    spark.sql(
        f"""
        CREATE OR REPLACE TEMPORARY FUNCTION wl_next_business_time(
            ts TIMESTAMP, hhmm STRING, tz STRING, calendar STRING DEFAULT '{DEFAULT_CALENDAR}')
        RETURNS TIMESTAMP
        DETERMINISTIC
        COMMENT 'first hhmm local time in tz at or after ts on a business day of calendar'
        RETURN timestamp_micros(_wl_next_business_time_us(unix_micros(ts), hhmm, tz, calendar))
        """
    )
    spark.sql(
        f"""
        CREATE OR REPLACE TEMPORARY FUNCTION wl_is_business_day(
            d DATE, calendar STRING DEFAULT '{DEFAULT_CALENDAR}')
        RETURNS BOOLEAN
        DETERMINISTIC
        COMMENT 'whether d is a business day of calendar'
        RETURN _wl_is_business_day(d, calendar)
        """
    )
    return FUNCTIONS
