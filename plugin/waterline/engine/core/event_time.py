"""Event-mode waterline bookkeeping persisted in the held table's commit state.

Per source: the greatest event time ingested and when it last brought data.
The feed's event waterline is derived from those by `waterline.clock`'s event
mode and only ever advances.
"""

from __future__ import annotations

from typing import Mapping

from waterline.clock import EventWaterline, advance
from waterline.engine.core.state import HeldState, SourceMark
from waterline.semantics import NEG_INF
from waterline.spec import FeedSpec


def advance_sources(
    previous: Mapping[str, SourceMark], max_event_by_source: Mapping[str, int], now_us: int
) -> dict[str, SourceMark]:
    """The sources' marks after an ingest that saw ``max_event_by_source`` at ``now_us``."""
    sources = dict(previous)
    for name, max_event in max_event_by_source.items():
        old = sources.get(name)
        sources[name] = SourceMark(max_event_us=max_event if old is None else max(old.max_event_us, max_event),
                                   last_seen_us=now_us)
    return sources


def event_waterline(
    spec: FeedSpec, sources: Mapping[str, SourceMark], previous_us: int | None, now_us: int
) -> int | None:
    """The event waterline at ``now_us`` (None in clock mode or before any data)."""
    if spec.waterline.mode != "event":
        return None
    mode = EventWaterline(
        lateness_us=int(spec.waterline.lateness.total_seconds() * 1_000_000),
        idle_after_us=(
            int(spec.waterline.idle_after.total_seconds() * 1_000_000) if spec.waterline.idle_after else None
        ),
    )
    proposed = mode.compute(
        {name: s.max_event_us for name, s in sources.items()},
        {name: s.last_seen_us for name, s in sources.items()},
        now_us,
    )
    if proposed is None:
        return previous_us
    return advance(previous_us, proposed, now_us)


def target_waterline(spec: FeedSpec, held: HeldState, now_us: int, as_of_us: int | None) -> int:
    """W = min(--as-of, trusted clock, the mode's waterline): nothing can push it past now."""
    target = now_us if as_of_us is None else min(as_of_us, now_us)
    if spec.waterline.mode == "event":
        event_w = event_waterline(spec, held.sources, held.event_w, now_us)
        target = min(target, NEG_INF if event_w is None else event_w)
    return target
