"""The Dagster partitions definition of a feed's partition scheme."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from dagster import (
    DailyPartitionsDefinition,
    HourlyPartitionsDefinition,
    PartitionsDefinition,
    StaticPartitionsDefinition,
)

from waterline.spec.partitions import DAILY_FORMAT, HOURLY_FORMAT

if TYPE_CHECKING:
    from waterline.spec import FeedSpec


def partitions_def_for(spec: "FeedSpec") -> PartitionsDefinition:
    """Daily/hourly/static partitions with the same keys as the spec.

    Time partitions run in UTC and include the current (still open) day or
    hour (``end_offset=1``): a live feed ingests today's partition during the
    day and re-ingests it as it grows. ``end`` in the spec is inclusive.
    """
    scheme = spec.partitions
    if scheme.kind == "static":
        return StaticPartitionsDefinition(list(scheme.values))
    if scheme.kind == "daily":
        end = None
        if scheme.end is not None:
            end = (datetime.strptime(scheme.end, DAILY_FORMAT) + timedelta(days=1)).strftime(DAILY_FORMAT)
        return DailyPartitionsDefinition(start_date=scheme.start, end_date=end, end_offset=1, fmt=DAILY_FORMAT)
    if scheme.kind == "hourly":
        end = None
        if scheme.end is not None:
            end = (datetime.strptime(scheme.end, HOURLY_FORMAT) + timedelta(hours=1)).strftime(HOURLY_FORMAT)
        return HourlyPartitionsDefinition(start_date=scheme.start, end_date=end, end_offset=1, fmt=HOURLY_FORMAT)
    raise ValueError(f"unknown partition kind {scheme.kind!r}")
