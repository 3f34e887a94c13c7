"""Hold and resume a tier: a held tier keeps its rows and W_T until resumed."""

from __future__ import annotations

from pyspark.sql import SparkSession

from waterline.engine.core.state import TierState
from waterline.engine.core.status import first_run_hint
from waterline.engine.tables.lease import feed_lease
from waterline.engine.tables.feed_tables import FeedTables
from waterline.engine.spark.commits import record_state
from waterline.errors import WaterlineError
from waterline.spec import FeedSpec


def set_hold(spark: SparkSession, spec: FeedSpec, tier: str, hold: bool) -> TierState:
    """Put ``tier`` on hold (``hold=True``) or resume it; returns the tier's new state."""
    if tier not in spec.tiers:
        raise WaterlineError(f"feed {spec.feed}: unknown tier {tier!r} (tiers: {', '.join(spec.tiers)})")
    path = spec.tier_path(tier)
    if not FeedTables.open(spec).tier(tier).exists:
        raise WaterlineError(f"feed {spec.feed}: tier {tier} has no table yet at {path}: {first_run_hint(spec)}")
    with feed_lease(spec.feed_dir, feed=spec.feed):
        state = FeedTables.open(spec).tier_state(tier)  # read again under the lease
        if state.hold == hold:
            return state
        state = state.evolve(op="hold" if hold else "resume", tier=tier, hold=hold, n=state.n + 1, token=None)
        record_state(spark, path, state)
        return state


def hold(spark: SparkSession, spec: FeedSpec, tier: str) -> TierState:
    return set_hold(spark, spec, tier, True)


def resume(spark: SparkSession, spec: FeedSpec, tier: str) -> TierState:
    return set_hold(spark, spec, tier, False)
