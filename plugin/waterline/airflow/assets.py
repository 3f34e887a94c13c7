"""The Airflow Assets of a feed: its held table and one per tier.

Names mirror the Dagster asset keys (``[feed, "held"]``, ``[feed, tier]``) as
``<feed>/held`` and ``<feed>/<tier>``; URIs are the Delta tables' locations, so
a downstream DAG schedules on a tier with ``schedule=[tier_asset(spec, "public")]``
and reads the tier's waterline W_T from the triggering event's ``extra``.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from airflow.sdk import Asset

from waterline.spec import FeedSpec

GROUP = "waterline"


def table_uri(path: str) -> str:
    """A Delta table location as an asset URI: ``file:///…`` for a local path, else unchanged."""
    if "://" in path:
        return path
    return PurePosixPath(path).as_uri() if path.startswith("/") else path


def held_asset(spec: FeedSpec) -> Asset:
    return Asset(name=f"{spec.feed}/held", uri=table_uri(spec.held_path), group=GROUP,
                 extra={"waterline/feed": spec.feed})


def tier_asset(spec: FeedSpec, tier: str) -> Asset:
    if tier not in spec.tiers:
        raise KeyError(f"feed {spec.feed}: unknown tier {tier!r} (tiers: {', '.join(spec.tiers)})")
    return Asset(name=f"{spec.feed}/{tier}", uri=table_uri(spec.tier_path(tier)), group=GROUP,
                 extra={"waterline/feed": spec.feed, "waterline/policy": spec.tiers[tier]})


def tier_assets(spec: FeedSpec) -> list[Asset]:
    return [tier_asset(spec, tier) for tier in spec.tiers]
