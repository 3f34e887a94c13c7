"""Durations and instants as users write them, and microsecond conversions.

Inside waterline every instant is an ``int`` of microseconds since the Unix
epoch, UTC. Conversions here are exact integer arithmetic (no float seconds),
so a round trip never moves an instant by a microsecond.
"""

from __future__ import annotations

import calendar
import re
import time
from datetime import datetime, timedelta, timezone
from typing import Callable

import pendulum

from waterline.errors import WaterlineError
from waterline.semantics import NEG_INF, POS_INF

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
ONE_US = timedelta(microseconds=1)


class ClockError(WaterlineError, ValueError):
    """Bad clock input (duration, instant, mode, calendar); one line, quoting the text."""


class TimeParseError(ClockError):
    """A duration or instant that cannot be read; the message quotes the text."""


# --- microseconds <-> datetime -------------------------------------------------


def to_us(dt: datetime) -> int:
    """Microseconds since the epoch for ``dt``; a naive datetime is taken as UTC."""
    # timegm on the UTC time tuple honours fold and works for pendulum DateTimes
    # too (whose subtraction returns pendulum Intervals).
    utc = dt.timetuple() if dt.tzinfo is None else dt.utctimetuple()
    return calendar.timegm(utc) * 1_000_000 + dt.microsecond


def from_us(us: int) -> datetime:
    """The aware UTC datetime for ``us`` microseconds since the epoch."""
    return EPOCH + timedelta(microseconds=us)


def duration_us(delta: timedelta) -> int:
    """A timedelta as whole microseconds."""
    return delta // ONE_US


# --- durations -----------------------------------------------------------------

_UNITS: dict[str, timedelta] = {}
for _names, _delta in (
    (("us", "µs", "usec", "usecs", "microsecond", "microseconds"), timedelta(microseconds=1)),
    (("ms", "msec", "msecs", "millisecond", "milliseconds"), timedelta(milliseconds=1)),
    (("s", "sec", "secs", "second", "seconds"), timedelta(seconds=1)),
    (("m", "min", "mins", "minute", "minutes"), timedelta(minutes=1)),
    (("h", "hr", "hrs", "hour", "hours"), timedelta(hours=1)),
    (("d", "day", "days"), timedelta(days=1)),
    (("w", "week", "weeks"), timedelta(weeks=1)),
):
    for _name in _names:
        _UNITS[_name] = _delta

_TERM = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zµ]+)\s*,?", re.IGNORECASE)
_EXAMPLES = "e.g. '30 seconds', '15 minutes', '1 day', '2h', '1h30m', 'PT15M'"


def parse_duration(text: str | int | float | timedelta) -> timedelta:
    """Read a non-negative duration: ``"30 seconds"``, ``"15 minutes"``, ``"2h"``, ``"1h 30m"``.

    Also accepts an optional leading ``INTERVAL`` (Spark style), ISO-8601
    ``"PT15M"``, a bare number of seconds (int/float, as YAML gives ``30``),
    and a ``timedelta`` as is. Months and years are rejected: their length
    varies, so they cannot be a delay. Raises :class:`TimeParseError` (a
    ``ValueError``) quoting the text.
    """
    if isinstance(text, timedelta):
        if text < timedelta(0):
            raise TimeParseError(f"invalid duration {text!r}: must not be negative")
        return text
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise TimeParseError(f"invalid duration {text!r}: expected text, {_EXAMPLES}")
    if isinstance(text, (int, float)):
        if text < 0:
            raise TimeParseError(f"invalid duration {text!r}: must not be negative")
        return timedelta(seconds=text)
    raw = text.strip()
    body = re.sub(r"^interval\s+", "", raw, flags=re.IGNORECASE)
    if re.fullmatch(r"\d+(?:\.\d+)?", body):
        return timedelta(seconds=float(body))
    if body[:1] in ("P", "p"):
        return _parse_iso_duration(text, body)
    total, pos = timedelta(0), 0
    while pos < len(body):
        match = _TERM.match(body, pos)
        if not match:
            raise TimeParseError(f"invalid duration {text!r}: expected {_EXAMPLES}")
        amount, unit = match.group(1), match.group(2).lower()
        if unit not in _UNITS:
            hint = " (months and years vary in length)" if unit.startswith(("mo", "y")) else ""
            raise TimeParseError(f"invalid duration {text!r}: unknown unit {unit!r}{hint}; expected {_EXAMPLES}")
        total += _UNITS[unit] * float(amount) if "." in amount else _UNITS[unit] * int(amount)
        pos = match.end()
    if pos == 0:
        raise TimeParseError(f"invalid duration {text!r}: expected {_EXAMPLES}")
    return total


def _parse_iso_duration(text: str, body: str) -> timedelta:
    try:
        parsed = pendulum.parse(body.upper())
    except Exception:
        parsed = None
    if not isinstance(parsed, pendulum.Duration):
        raise TimeParseError(f"invalid duration {text!r}: not an ISO-8601 duration; expected {_EXAMPLES}")
    if parsed.years or parsed.months:
        raise TimeParseError(f"invalid duration {text!r}: months and years vary in length")
    return timedelta(seconds=parsed.total_seconds())


# --- instants ------------------------------------------------------------------

_NOW_OFFSET = re.compile(r"now\s*([+-])\s*(.+)", re.IGNORECASE)


def parse_instant(
    text: str,
    *,
    now_us: int | Callable[[], int] | None = None,
    tz: str = "UTC",
) -> int:
    """Read an instant as microseconds since the epoch.

    Accepts ISO-8601 forms (``"2026-01-05T13:30:00Z"``, ``"2026-01-05 13:30"``,
    ``"2026-01-05"``, offsets like ``+01:00``, fractional seconds), ``"now"``
    and ``"now - 15 minutes"`` / ``"now+1h"``. Text without an offset is read in
    ``tz`` (default UTC); a local time that falls in a DST gap is moved forward
    by the gap, an ambiguous one takes the first occurrence. ``now_us`` is the
    trusted clock's value or a callable returning it (default: the system clock).
    """
    raw = text.strip() if isinstance(text, str) else text
    if not isinstance(raw, str) or not raw:
        raise TimeParseError(f"invalid instant {text!r}: expected e.g. '2026-01-05T13:30:00Z' or 'now'")
    if raw.lower() == "now" or _NOW_OFFSET.fullmatch(raw):
        now = _resolve_now(now_us)
        offset = _NOW_OFFSET.fullmatch(raw)
        if offset is None:
            return now
        try:
            delta = duration_us(parse_duration(offset.group(2)))
        except TimeParseError as err:
            raise TimeParseError(f"invalid instant {text!r}: {err}") from None
        return now + delta if offset.group(1) == "+" else now - delta
    iso = raw[:-1] + "+00:00" if raw[-1:] in ("Z", "z") else raw
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        raise TimeParseError(
            f"invalid instant {text!r}: expected ISO-8601 like '2026-01-05T13:30:00Z', '2026-01-05 13:30' or 'now'"
        ) from None
    if dt.tzinfo is None and tz != "UTC":
        try:
            local = pendulum.datetime(
                dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, dt.microsecond, tz=tz, fold=0
            )
        except Exception:
            raise TimeParseError(f"invalid instant {text!r}: unknown time zone {tz!r}") from None
        if (local.hour, local.minute) != (dt.hour, dt.minute):  # in a DST gap: move forward
            local = pendulum.datetime(
                dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, dt.microsecond, tz=tz, fold=1
            )
        dt = local
    return to_us(dt)


def system_now_us() -> int:
    """The process's UTC system clock in µs (``time.time_ns``; no time zone involved): what
    `SystemClock` reads, and ``now`` in an instant parsed without a clock."""
    return time.time_ns() // 1000


def _resolve_now(now_us: int | Callable[[], int] | None) -> int:
    if now_us is None:
        return system_now_us()
    return now_us() if callable(now_us) else now_us


def format_instant(us: int) -> str:
    """ISO-8601 UTC text for ``us``: ``2026-01-05T13:30:00Z`` (microseconds only if non-zero).

    The sentinels print as ``-inf`` / ``+inf``; instants beyond year 1..9999 as ``<n>us``.
    """
    if us <= NEG_INF:
        return "-inf"
    if us >= POS_INF:
        return "+inf"
    try:
        dt = from_us(us)
    except OverflowError:
        return f"{us}us"
    # Not strftime: %Y does not zero-pad years below 1000 on every platform.
    text = f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
    if dt.microsecond:
        text += f".{dt.microsecond:06d}"
    return text + "Z"


# Largest first, so `duration_text` picks the coarsest unit that divides exactly.
_TEXT_UNITS = (
    ("day", 86_400_000_000),
    ("hour", 3_600_000_000),
    ("minute", 60_000_000),
    ("second", 1_000_000),
    ("millisecond", 1_000),
    ("microsecond", 1),
)


def duration_text(value: timedelta) -> str:
    """A duration as a spec writes it, which `parse_duration` reads back: ``"15 minutes"``."""
    micros = duration_us(value)
    if micros == 0:
        return "0 seconds"
    for name, size in _TEXT_UNITS:
        if micros % size == 0:
            count = micros // size
            return f"{count} {name}" if count == 1 else f"{count} {name}s"
    raise AssertionError("unreachable: microseconds divide every duration")


def format_duration(us: int) -> str:
    """Short human text for a duration in µs: ``1d 2h 3m 4s``, ``250ms``, ``0s``."""
    sign, us = ("-", -us) if us < 0 else ("", us)
    seconds, rest = divmod(us, 1_000_000)
    if seconds == 0:
        return f"{sign}{rest // 1000}ms" if rest >= 1000 else f"{sign}{rest}us" if rest else "0s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        amount, seconds = divmod(seconds, size)
        if amount:
            parts.append(f"{amount}{unit}")
    return sign + " ".join(parts)
