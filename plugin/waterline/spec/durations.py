"""Duration strings in feed specs: ``"30 seconds"``, ``"15 minutes"``, ``"1 day"``.

`waterline.clock.parse_duration` is the public parser used by the rest of
waterline, and `parse_duration` here delegates to it so a spec accepts exactly
what the CLI and the clock accept. `_parse_duration` is the spec's own small
parser (number + unit terms), used only if `waterline.clock` cannot be imported.
"""

from __future__ import annotations

import re
from datetime import timedelta

_UNIT_MICROS: dict[str, int] = {}
for _names, _micros in (
    (("us", "µs", "microsecond", "microseconds"), 1),
    (("ms", "millisecond", "milliseconds"), 1_000),
    (("s", "sec", "secs", "second", "seconds"), 1_000_000),
    (("m", "min", "mins", "minute", "minutes"), 60_000_000),
    (("h", "hr", "hrs", "hour", "hours"), 3_600_000_000),
    (("d", "day", "days"), 86_400_000_000),
    (("w", "week", "weeks"), 604_800_000_000),
):
    for _name in _names:
        _UNIT_MICROS[_name] = _micros

# "1 hour 30 minutes", "90s", "1.5 hours": number + unit, repeated.
_TERM = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zµ]+)\s*,?", re.IGNORECASE)

# Largest first, so formatting picks the coarsest unit that divides exactly.
_FORMAT_UNITS = (
    ("day", 86_400_000_000),
    ("hour", 3_600_000_000),
    ("minute", 60_000_000),
    ("second", 1_000_000),
    ("millisecond", 1_000),
    ("microsecond", 1),
)


def _parse_duration(text: str) -> timedelta:
    """Parse ``"<number> <unit>"`` terms (``"1 hour 30 minutes"``) into a timedelta.

    Raises ValueError with a short reason; the caller adds the key path.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError("expected a duration like '30 seconds' or '15 minutes'")
    micros = 0
    pos = 0
    source = text.strip()
    while pos < len(source):
        match = _TERM.match(source, pos)
        if not match:
            raise ValueError(f"cannot parse duration {text!r}; write e.g. '30 seconds', '15 minutes', '1 day'")
        number, unit = match.group(1), match.group(2).lower()
        if unit not in _UNIT_MICROS:
            raise ValueError(
                f"unknown unit {unit!r} in duration {text!r}; use ms, seconds, minutes, hours, days or weeks"
            )
        micros += round(float(number) * _UNIT_MICROS[unit])
        pos = match.end()
    return timedelta(microseconds=micros)


def parse_duration(text: object) -> timedelta:
    """Parse a spec duration; raises ValueError (the clock's TimeParseError is one)."""
    try:
        from waterline.clock import parse_duration as clock_parse_duration
    except ImportError:
        return _parse_duration(text)  # type: ignore[arg-type]
    return clock_parse_duration(text)  # type: ignore[arg-type]


def format_duration(value: timedelta) -> str:
    """Render a timedelta so that `_parse_duration` gives it back (``"15 minutes"``)."""
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    if micros == 0:
        return "0 seconds"
    for name, size in _FORMAT_UNITS:
        if micros % size == 0:
            count = micros // size
            return f"{count} {name}" if count == 1 else f"{count} {name}s"
    raise AssertionError("unreachable: microseconds divide every duration")
