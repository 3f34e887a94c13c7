"""A minimal valid spec dict, varied per test."""

from __future__ import annotations

import copy

import pytest

MINIMAL = {
    "feed": "ticks",
    "warehouse": "wh",
    "source": {"format": "json", "path": "data/ticks/{partition}/"},
    "partitions": {"daily": {"start": "2026-01-01"}},
    "key": ["symbol", "seq"],
    "event_time": "event_time",
    "tiers": {"realtime": "TRUE", "delayed_15m": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"},
}


@pytest.fixture
def minimal() -> dict:
    return copy.deepcopy(MINIMAL)
