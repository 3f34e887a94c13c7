"""The feed spec's top-level keys: one table that the YAML loader and the Dagster
``ReleaseFeed`` Component both derive from, so the two cannot drift apart.

Each key has the shape a YAML value takes before validation (`waterline.spec.loader`
turns it into a `FeedSpec`, with the one-line errors), whether it is required,
and a description (shown by ``dg`` for the Component's attributes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SpecKey:
    """One top-level spec key: the type of its raw YAML value, required or not, what it means."""

    type: Any
    required: bool
    description: str


SPEC_KEYS: dict[str, SpecKey] = {
    "feed": SpecKey(str, True, "The feed's name: lower case letters, digits and _; names its folder and assets."),
    "description": SpecKey(str | None, False, "Free text shown with the feed's assets."),
    "warehouse": SpecKey(str, True, "Folder or s3a:// URI; the feed's Delta tables live under <warehouse>/<feed>/."),
    "source": SpecKey(dict[str, Any] | None, False,
                      "One source: {format: json|csv|parquet|delta, path, options} or {format: kafka, bootstrap, topic, value}."),
    "sources": SpecKey(dict[str, dict[str, Any]] | None, False, "Several named sources instead of `source`."),
    "partitions": SpecKey(dict[str, Any], True, "{daily|hourly: {start, end}} or {static: [keys]}."),
    "transform": SpecKey(str | None, False, "Spark SQL over the view `source` (or one view per source)."),
    "job": SpecKey(str | None, False, "A Python Spark step `module:function`, instead of or after the transform."),
    "key": SpecKey(list[str] | str, True, "The key columns; a row's identity is (partition, key)."),
    "event_time": SpecKey(str, True, "The event-time column (TIMESTAMP)."),
    "timezone": SpecKey(str | None, False, "How naive timestamps in the source are read (default UTC)."),
    "waterline": SpecKey(dict[str, Any] | None, False, "{mode: clock} or {mode: event, lateness, idle_after}."),
    "tiers": SpecKey(dict[str, str], True, "Tier name -> release policy (Spark SQL with WATERLINE())."),
    "late": SpecKey(str | None, False, "Rows below the event waterline: publish (default), drop or quarantine."),
    "release_interval_seconds": SpecKey(int | None, False, "Seconds between release sensor ticks (default 30)."),
    "release_lead_seconds": SpecKey(int | None, False, "How early a release run is started for a due moment."),
    "freshness_lag_seconds": SpecKey(int | None, False, "Expected lag of tiers whose policy is not a plain delay."),
    "spark": SpecKey(dict[str, Any] | None, False, "Where Spark runs: {master, remote, conf}; env variables win."),
    "audiences": SpecKey(
        dict[str, list[str]] | None, False, "Recipient -> the tiers it may read over Delta Sharing (never the held table)."
    ),
    "partition_by": SpecKey(str | None, False,
                            "Stream feeds: Spark SQL over an output row giving its partition key, e.g. date(event_time)."),
    "remove_when": SpecKey(str | None, False,
                           "Stream feeds: Spark SQL over a record, TRUE when it removes its key (e.g. value IS NULL)."),
    "maintenance": SpecKey(
        dict[str, str] | None, False,
        "{time_travel: 7 days, every: 1 hour}: how long past tier versions stay readable; how often to maintain.",
    ),
}

TOP_LEVEL_KEYS: tuple[str, ...] = tuple(SPEC_KEYS)
REQUIRED_KEYS: tuple[str, ...] = tuple(name for name, key in SPEC_KEYS.items() if key.required)
