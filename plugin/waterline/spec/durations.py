"""Duration strings in feed specs: ``"30 seconds"``, ``"15 minutes"``, ``"1 day"``.

Parsing is `waterline.clock.parse_duration`'s; this module adds the canonical
text form the spec writes back (`format_duration`).
"""

from __future__ import annotations

from datetime import timedelta

from waterline.clock import parse_duration as clock_parse_duration

# Largest first, so formatting picks the coarsest unit that divides exactly.
_FORMAT_UNITS = (
    ("day", 86_400_000_000),
    ("hour", 3_600_000_000),
    ("minute", 60_000_000),
    ("second", 1_000_000),
    ("millisecond", 1_000),
    ("microsecond", 1),
)


def parse_duration(text: object) -> timedelta:
    """Parse a spec duration with `waterline.clock.parse_duration` (raises its TimeParseError,
    a ValueError), so a spec accepts exactly what the CLI and the clock accept."""
    return clock_parse_duration(text)  # type: ignore[arg-type]


def format_duration(value: timedelta) -> str:
    """Render a timedelta so that `parse_duration` gives it back (``"15 minutes"``)."""
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    if micros == 0:
        return "0 seconds"
    for name, size in _FORMAT_UNITS:
        if micros % size == 0:
            count = micros // size
            return f"{count} {name}" if count == 1 else f"{count} {name}s"
    raise AssertionError("unreachable: microseconds divide every duration")
