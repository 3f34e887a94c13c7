"""Hold and resume a tier: a held tier keeps its rows and W_T until resumed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from waterline.engine.commits import record_state, table_exists
from waterline.engine.lease import feed_lease
from waterline.engine.tables import tier_state
from waterline.errors import WaterlineError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from waterline.spec import FeedSpec


def set_hold(spark: "SparkSession", spec: "FeedSpec", tier: str, hold: bool) -> dict:
    """Put ``tier`` on hold (``hold=True``) or resume it; returns the tier's new state."""
    if tier not in spec.tiers:
        raise WaterlineError(f"feed {spec.feed}: unknown tier {tier!r} (tiers: {', '.join(spec.tiers)})")
    path = spec.tier_path(tier)
    if not table_exists(path):
        raise WaterlineError(f"feed {spec.feed}: tier {tier} has no table yet at {path}: ingest a partition first")
    with feed_lease(spec.feed_dir, feed=spec.feed):
        state = tier_state(spec, tier)
        if state["hold"] == hold:
            return state
        state.update(op="hold" if hold else "resume", tier=tier, hold=hold, n=state.get("n", 0) + 1)
        record_state(spark, path, state)
        return state


def hold(spark: "SparkSession", spec: "FeedSpec", tier: str) -> dict:
    return set_hold(spark, spec, tier, True)


def resume(spark: "SparkSession", spec: "FeedSpec", tier: str) -> dict:
    return set_hold(spark, spec, tier, False)
