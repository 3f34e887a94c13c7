"""Waterline modes (what W a release proposes) and the monotonic advance rule.

* ``clock`` mode: W = now.
* ``event`` mode: per source, ``max event_time seen - lateness``; W is the
  minimum over the sources that are *active* (received data within
  ``idle_after`` of now), capped at now. Decisions where DESIGN.md is silent:

  - A source is idle iff ``now - last_seen > idle_after`` (data exactly
    ``idle_after`` ago still counts as active). With ``idle_after`` unset, no
    source is ever idle. A source with a max event time but no ``last_seen``
    entry counts as idle when ``idle_after`` is set (nothing shows it is live).
  - A source that has never received data has no max event time; it does
    not hold W back (it is idle by definition).
  - **All sources idle**: W = the *maximum* over sources of
    ``max event - lateness``, capped at now. Rationale: nothing is arriving,
    so holding W at the slowest source would stall every delayed tier
    forever (e.g. the last 15 minutes of the trading day would never be
    released); data that arrives later is simply late and is published by the
    next release (DESIGN.md: nothing is dropped silently). When a source
    resumes, the minimum may be lower again; :func:`advance` keeps W where
    it was, so W never goes back.
  - No data at all: ``None`` (no waterline yet; the release does nothing).

:func:`advance` combines a proposal with the persisted W and the trusted clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Mapping, Protocol

from waterline.clock.durations import ClockError, duration_us, parse_duration


class WaterlineMode(Protocol):
    def compute(
        self,
        source_max_event_us: Mapping[str, int | None],
        source_last_seen_us: Mapping[str, int | None],
        now_us: int,
    ) -> int | None: ...


@dataclass(frozen=True)
class ClockWaterline:
    """``mode: clock``: W = the trusted clock's now. Source statistics are ignored."""

    def compute(
        self,
        source_max_event_us: Mapping[str, int | None] | None = None,
        source_last_seen_us: Mapping[str, int | None] | None = None,
        now_us: int = 0,
    ) -> int:
        return now_us


@dataclass(frozen=True)
class EventWaterline:
    """``mode: event``: W from the data's own event times (see the module docstring)."""

    lateness_us: int
    idle_after_us: int | None = None

    def __post_init__(self) -> None:
        if self.lateness_us < 0:
            raise ClockError(f"lateness must not be negative, got {self.lateness_us}us")
        if self.idle_after_us is not None and self.idle_after_us < 0:
            raise ClockError(f"idle_after must not be negative, got {self.idle_after_us}us")

    def is_idle(self, last_seen_us: int | None, now_us: int) -> bool:
        """Whether a source with data last received at ``last_seen_us`` is idle at ``now_us``."""
        if self.idle_after_us is None:
            return False
        return last_seen_us is None or now_us - last_seen_us > self.idle_after_us

    def compute(
        self,
        source_max_event_us: Mapping[str, int | None],
        source_last_seen_us: Mapping[str, int | None],
        now_us: int,
    ) -> int | None:
        """The proposed W, or None when no source has seen any data."""
        proposals = {
            name: max_event - self.lateness_us
            for name, max_event in source_max_event_us.items()
            if max_event is not None
        }
        if not proposals:
            return None
        active = [w for name, w in proposals.items() if not self.is_idle(source_last_seen_us.get(name), now_us)]
        proposed = min(active) if active else max(proposals.values())
        return min(proposed, now_us)


def advance(previous_us: int | None, proposed_us: int | None, now_us: int) -> int | None:
    """The next persisted W: never decreases, never exceeds now.

    ``max(previous, min(proposed, now))``. If ``previous > now`` (the clock went
    back, or a skewed machine released before) W stays at ``previous``: it
    neither goes back nor advances further. ``proposed=None`` (no data yet)
    keeps ``previous``.
    """
    if proposed_us is None:
        return previous_us
    capped = min(proposed_us, now_us)
    if previous_us is None:
        return capped
    return max(previous_us, capped)


def waterline_mode(
    mode: str = "clock",
    lateness: str | int | float | timedelta | None = None,
    idle_after: str | int | float | timedelta | None = None,
) -> ClockWaterline | EventWaterline:
    """Build the mode from spec values (``{mode: event, lateness: 30 seconds, idle_after: 10 minutes}``)."""
    kind = str(mode).strip().lower()
    if kind == "clock":
        return ClockWaterline()
    if kind == "event":
        lateness_us = duration_us(parse_duration(lateness)) if lateness is not None else 0
        idle_us = duration_us(parse_duration(idle_after)) if idle_after is not None else None
        return EventWaterline(lateness_us=lateness_us, idle_after_us=idle_us)
    raise ClockError(f"unknown waterline mode {mode!r}: expected 'clock' or 'event'")
