"""Clocks, waterline modes and the monotonic advance rule."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.semantics.examples import property_settings
from waterline.clock import (
    Clock,
    ClockError,
    ClockWaterline,
    EventWaterline,
    FixedClock,
    OffsetClock,
    SystemClock,
    advance,
    parse_instant,
    waterline_mode,
)

S = 1_000_000  # one second in µs


def test_clocks():
    import time

    before = time.time_ns() // 1000
    assert before <= SystemClock().now_us() <= time.time_ns() // 1000
    fixed = FixedClock("2026-01-05T13:30:00Z")
    assert fixed.now_us() == parse_instant("2026-01-05T13:30:00Z")
    fixed.advance(timedelta(seconds=2))
    assert fixed.now_us() == parse_instant("2026-01-05T13:30:02Z")
    skewed = OffsetClock(fixed, timedelta(minutes=-1))
    assert skewed.now_us() == parse_instant("2026-01-05T13:29:02Z")
    assert all(isinstance(c, Clock) for c in (SystemClock(), fixed, skewed))


def test_clock_mode_is_now():
    assert ClockWaterline().compute({"a": 5}, {"a": 5}, 100) == 100


def test_event_mode_minimum_over_active_sources_capped_at_now():
    mode = EventWaterline(lateness_us=10 * S, idle_after_us=60 * S)
    now = 1000 * S
    max_event = {"nyse": 900 * S, "nasdaq": 950 * S}
    seen = {"nyse": now - 5 * S, "nasdaq": now}
    assert mode.compute(max_event, seen, now) == 890 * S
    # nyse idle (last data 61 s ago): nasdaq alone decides.
    assert mode.compute(max_event, {"nyse": now - 61 * S, "nasdaq": now}, now) == 940 * S
    # Exactly idle_after ago still counts as active.
    assert mode.compute(max_event, {"nyse": now - 60 * S, "nasdaq": now}, now) == 890 * S
    # All idle: the maximum, so quiet feeds still release everything seen.
    assert mode.compute(max_event, {}, now) == 940 * S
    # Far-future event times never push W past the trusted clock.
    assert mode.compute({"x": 10**9 * S}, {"x": now}, now) == now
    assert mode.compute({}, {}, now) is None
    assert mode.compute({"x": None}, {}, now) is None


def test_event_mode_without_idle_after_never_idles():
    mode = EventWaterline(lateness_us=0)
    assert mode.compute({"a": 10, "b": 20}, {}, 100) == 10


def test_waterline_mode_from_spec_values():
    assert waterline_mode("clock") == ClockWaterline()
    assert waterline_mode("event", "30 seconds", "10 minutes") == EventWaterline(30 * S, 600 * S)
    assert waterline_mode("event") == EventWaterline(0, None)
    with pytest.raises(ClockError, match="'tide'"):
        waterline_mode("tide")
    with pytest.raises(ValueError, match="'soon'"):
        waterline_mode("event", "soon")


def test_advance_examples():
    assert advance(None, 50, 100) == 50
    assert advance(None, 150, 100) == 100  # capped at now
    assert advance(60, 50, 100) == 60  # never decreases
    assert advance(60, 80, 100) == 80
    assert advance(200, 300, 100) == 200  # clock went back: keep, do not advance
    assert advance(60, None, 100) == 60
    assert advance(None, None, 100) is None


instants = st.integers(-(10**12), 10**12)


@property_settings()
@given(st.one_of(st.none(), instants), st.one_of(st.none(), instants), instants)
def test_advance_never_decreases_and_never_passes_the_clock(previous, proposed, now):
    w = advance(previous, proposed, now)
    if previous is not None:
        assert w >= previous
        if previous > now:
            assert w == previous  # skew: neither back nor forward
    if w is not None and (previous is None or previous <= now):
        assert w <= now
    if proposed is not None and previous is not None and previous <= min(proposed, now):
        assert w == min(proposed, now)
    assert advance(w, proposed, now) == w  # re-running the same release is a no-op


@property_settings()
@given(st.lists(st.tuples(instants, instants), min_size=1, max_size=20))
def test_persisted_waterline_is_monotonic_and_behind_every_clock_reading(steps):
    """A sequence of releases, each with its own (possibly skewed) clock reading."""
    w, seen_nows = None, []
    for proposed, now in steps:
        new = advance(w, proposed, now)
        assert w is None or new >= w
        seen_nows.append(now)
        # W never exceeds the clock reading of the release that set it.
        if new != w:
            assert new <= now
        w = new


@property_settings()
@given(
    st.dictionaries(st.sampled_from("abcd"), st.one_of(st.none(), instants)),
    st.dictionaries(st.sampled_from("abcd"), instants),
    instants,
    st.integers(0, 10**6),
    st.one_of(st.none(), st.integers(0, 10**6)),
)
def test_event_waterline_is_bounded_by_sources_and_clock(max_event, last_seen, now, lateness, idle_after):
    w = EventWaterline(lateness, idle_after).compute(max_event, last_seen, now)
    proposals = [m - lateness for m in max_event.values() if m is not None]
    if not proposals:
        assert w is None
        return
    assert w <= now
    assert w == min(now, w) and min(min(proposals), now) <= w <= min(max(proposals), now)
