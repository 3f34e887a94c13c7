"""Trusted clock, waterline modes, durations/instants and business calendars.

Pure Python (pendulum, holidays): no Spark, no Dagster. Instants are ``int``
microseconds since the Unix epoch, UTC.
"""

from waterline.clock.calendars import (
    business_calendar,
    is_business_day,
    local_instants,
    next_business_time,
    next_session_open,
    parse_time_of_day,
)
from waterline.clock.durations import (
    ClockError,
    TimeParseError,
    duration_text,
    duration_us,
    format_duration,
    format_instant,
    from_us,
    parse_duration,
    parse_instant,
    to_us,
)
from waterline.clock.modes import ClockWaterline, EventWaterline, WaterlineMode, advance, waterline_mode
from waterline.clock.trusted import Clock, FixedClock, OffsetClock, SystemClock, resolve_clock
from waterline.clock.waiting import wait_until

__all__ = [
    "Clock",
    "ClockError",
    "ClockWaterline",
    "EventWaterline",
    "FixedClock",
    "OffsetClock",
    "SystemClock",
    "TimeParseError",
    "WaterlineMode",
    "advance",
    "business_calendar",
    "duration_text",
    "duration_us",
    "format_duration",
    "format_instant",
    "from_us",
    "is_business_day",
    "local_instants",
    "next_business_time",
    "next_session_open",
    "parse_duration",
    "parse_instant",
    "parse_time_of_day",
    "resolve_clock",
    "to_us",
    "wait_until",
    "waterline_mode",
]
