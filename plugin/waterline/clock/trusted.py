"""The trusted clock: the only source of "now" a release may rely on.

DESIGN.md: W never exceeds the trusted clock, the UTC system clock of the
process that releases. Everything that needs "now" takes a :class:`Clock`, so
tests inject :class:`FixedClock` instead of sleeping.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol, runtime_checkable

from waterline.clock.durations import duration_us, parse_instant, system_now_us


@runtime_checkable
class Clock(Protocol):
    """Anything with ``now_us()``: microseconds since the epoch, UTC."""

    def now_us(self) -> int: ...


class SystemClock:
    """The process's UTC system clock (``time.time_ns``; no time zone involved)."""

    def now_us(self) -> int:
        return system_now_us()

    def __repr__(self) -> str:
        return "SystemClock()"


class FixedClock:
    """A clock that reads what it was set to; for tests and reproducible demos."""

    def __init__(self, now: int | str) -> None:
        self._now = parse_instant(now, now_us=0) if isinstance(now, str) else int(now)

    def now_us(self) -> int:
        return self._now

    def set(self, now: int | str) -> None:
        self._now = parse_instant(now, now_us=self._now) if isinstance(now, str) else int(now)

    def advance(self, by: timedelta | int) -> int:
        """Move forward by a timedelta or a number of µs (negative allowed: to test skew)."""
        self._now += duration_us(by) if isinstance(by, timedelta) else int(by)
        return self._now

    def __repr__(self) -> str:
        return f"FixedClock({self._now})"


class OffsetClock:
    """Another clock shifted by a fixed offset: simulates a skewed or replayed machine."""

    def __init__(self, base: Clock, offset: timedelta | int) -> None:
        self.base = base
        self.offset_us = duration_us(offset) if isinstance(offset, timedelta) else int(offset)

    def now_us(self) -> int:
        return self.base.now_us() + self.offset_us

    def __repr__(self) -> str:
        return f"OffsetClock({self.base!r}, {self.offset_us})"


def resolve_clock(clock: Clock | None) -> Clock:
    """``clock`` or, when None, the system clock (the engine's default)."""
    return clock if clock is not None else SystemClock()
