"""The feed's assets: ``[feed, "held"]`` (partitioned ingest) and ``[feed, tier]`` (release).

Spark comes from the ``pyspark`` resource (dagster-pyspark's ``PySparkResource``);
the engine functions do the work, and their results become metadata.
"""


import time
import warnings
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from dagster import (
    AssetExecutionContext,
    AssetSpec,
    BackfillPolicy,
    DataVersion,
    Failure,
    MaterializeResult,
    asset,
    multi_asset,
)

from waterline.dagster import metadata as md
from waterline.dagster.freshness import expected_lag_seconds, tier_freshness_policy
from waterline.dagster.partitions import partitions_def_for
from waterline.dagster.translator import HELD, WaterlineTranslator

if TYPE_CHECKING:
    from waterline.spec import FeedSpec

KINDS = {"spark", "delta"}


def build_held_asset(spec: "FeedSpec", translator: WaterlineTranslator, *, resource_key: str = "pyspark"):
    """``[feed, "held"]``: materializing partitions ingests them, in key order, in one run."""
    key = translator.get_asset_key(spec, HELD)
    with warnings.catch_warnings():
        # backfill_policy is marked beta in dagster 1.13; single-run backfills are what we want.
        warnings.filterwarnings("ignore", message=".*backfill_policy.*")
        return _held_asset(spec, translator, key, resource_key)


def _held_asset(spec: "FeedSpec", translator: WaterlineTranslator, key, resource_key: str):
    @asset(
        key=key,
        partitions_def=partitions_def_for(spec),
        backfill_policy=BackfillPolicy.single_run(),
        required_resource_keys={resource_key},
        group_name=translator.get_group_name(spec),
        description=translator.get_description(spec, HELD),
        kinds=KINDS,
        tags=translator.get_tags(spec, HELD),
        metadata={"dagster/uri": spec.held_path, "waterline/feed": spec.feed},
    )
    def _held(context: AssetExecutionContext) -> MaterializeResult:
        from waterline.engine.ingest import ingest
        from waterline.engine.state import read_feed_state

        spark = getattr(context.resources, resource_key).spark_session
        keys = list(context.partition_keys)
        started = time.monotonic()
        results = []
        for partition in keys:  # a range arrives as one run: ingest its keys in order
            with one_line_failure():
                result = ingest(spark, spec, partition)
            context.log.info(result.summary())
            results.append(result)
        state = read_feed_state(spec)
        return MaterializeResult(
            metadata=md.ingest_metadata(spec, results, state, seconds=time.monotonic() - started)
        )

    return _held


def build_tier_assets(spec: "FeedSpec", translator: WaterlineTranslator, *, resource_key: str = "pyspark"):
    """One ``multi_asset`` releasing every tier: ``[feed, tier]`` with DataVersion = W_T."""
    held_key = translator.get_asset_key(spec, HELD)
    keys = {tier: translator.get_asset_key(spec, tier) for tier in spec.tiers}
    specs = [
        AssetSpec(
            key=keys[tier],
            deps=[held_key],
            group_name=translator.get_group_name(spec),
            description=translator.get_description(spec, tier),
            kinds=KINDS,
            tags=translator.get_tags(spec, tier),
            metadata={"dagster/uri": spec.tier_path(tier), "waterline/policy": policy}
            | ({} if expected_lag_seconds(spec, tier) is None
               else {"waterline/expected_lag_seconds": expected_lag_seconds(spec, tier)}),
            freshness_policy=tier_freshness_policy(spec, tier),
        )
        for tier, policy in spec.tiers.items()
    ]

    @multi_asset(
        name=f"{spec.feed}_release_tiers",
        specs=specs,
        can_subset=False,  # one release advances every tier not on hold, in one lease
        required_resource_keys={resource_key},
        description=f"Release every tier of feed {spec.feed} to the current waterline.",
    )
    def _release(context: AssetExecutionContext):
        from waterline.clock import SystemClock
        from waterline.engine.commits import table_exists
        from waterline.engine.prearmed import arming_line, release_run

        if not table_exists(spec.held_path):
            raise Failure(
                description=(
                    f"feed {spec.feed}: nothing ingested yet; materialize a partition of "
                    f"{held_key.to_user_string()} first"
                )
            )
        spark = getattr(context.resources, resource_key).spark_session
        clock = SystemClock()
        due_us = _due_tag(context)
        if line := arming_line(spec.feed, due_us, clock.now_us()):
            context.log.info(line)
        started = time.monotonic()
        with one_line_failure():
            run = release_run(spark, spec, due_us=due_us, clock=clock)
        lags = [lag / 1e6 for _, lag in run.lags]
        for moment, lag in run.lags:
            context.log.info(f"{spec.feed}: released {lag / 1e6:.3f} s after the due moment {_fmt(moment)}")
        result = run.result
        seconds = time.monotonic() - started
        now = clock.now_us()
        for tier, tier_result in result.tiers.items():
            context.log.info(tier_result.summary(spec.feed))
            yield MaterializeResult(
                asset_key=keys[tier],
                data_version=None if tier_result.w_us is None else DataVersion(str(tier_result.w_us)),
                metadata=md.release_metadata(spec, tier, tier_result, now_us=now, seconds=seconds)
                | _lag_metadata(due_us, now, tier_result, lags),
            )

    return _release


@contextmanager
def one_line_failure() -> Iterator[None]:
    """A `WaterlineError` (bad input, a feed's transform failing on its data) as a Dagster
    `Failure` with the CLI's one-line message and no Python traceback of waterline's."""
    from waterline.errors import WaterlineError

    try:
        yield
    except WaterlineError as err:
        raise Failure(description=str(err), allow_retries=False) from None


def _due_tag(context) -> int | None:
    """The due moment (µs) the sensor requested this run for (tag ``waterline/due_us``), if any."""
    from waterline.dagster.sensors import DUE_TAG

    raw = context.run.tags.get(DUE_TAG)
    try:
        return None if raw is None else int(raw)
    except ValueError:
        return None


def _lag_metadata(due_us: int | None, commit_us: int, tier_result, lags: list[float] | None = None) -> dict:
    """``waterline/release_lag_seconds``: commit time minus the due moment the run was for;
    with several due moments released by one pre-armed run, the worst of them and their count."""
    from waterline.semantics import NEG_INF

    if due_us is None or due_us <= NEG_INF or tier_result.held or tier_result.w_us is None or tier_result.w_us < due_us:
        return {}
    if not lags:
        return {"waterline/release_lag_seconds": round((commit_us - due_us) / 1e6, 3)}
    return {"waterline/release_lag_seconds": round(max(lags), 3), "waterline/due_moments_released": len(lags)}


def _fmt(us: int | None) -> str:
    from waterline.clock import format_instant

    return "none" if us is None else format_instant(us)
