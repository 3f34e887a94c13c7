"""The feed's assets: ``[feed, "held"]`` (partitioned ingest) and ``[feed, tier]`` (release).

Thin adapters over `waterline.Feed`: the `WaterlineResource` hands each run the
feed, its methods do the work, and their typed results become metadata.
"""


import time
import warnings

from dagster import (
    AssetExecutionContext,
    BackfillPolicy,
    DataVersion,
    Failure,
    MaterializeResult,
    multi_asset,
)

from waterline.clock import format_instant
from waterline.dagster import metadata as md
from waterline.dagster.errors import dagster_failures
from waterline.dagster.resources import RESOURCE_KEY, WaterlineResource
from waterline.dagster.sensors import DUE_TAG
from waterline.dagster.translator import HELD, WaterlineTranslator
from waterline.engine.core.due import arming_line
from waterline.engine.core.results import TierRelease
from waterline.semantics import NEG_INF
from waterline.spec import FeedSpec

def build_held_asset(spec: FeedSpec, translator: WaterlineTranslator, *, resource_key: str = RESOURCE_KEY):
    """``[feed, "held"]``: materializing partitions ingests them, in key order, in one run;
    a stream feed's (not partitioned) drains what its topics hold (`build_stream_asset`)."""
    if spec.is_stream:
        return build_stream_asset(spec, translator, resource_key=resource_key)
    held = translator.get_asset_spec(spec, HELD)
    with warnings.catch_warnings():
        # backfill_policy is marked beta in dagster 1.13; single-run backfills are what we want.
        warnings.filterwarnings("ignore", message=".*backfill_policy.*")

        @multi_asset(
            name=held.key.to_python_identifier(),
            specs=[held],
            backfill_policy=BackfillPolicy.single_run(),
            required_resource_keys={resource_key},
        )
        def _held(context: AssetExecutionContext) -> MaterializeResult:
            resource: WaterlineResource = getattr(context.resources, resource_key)
            feed = resource.get_feed(spec)
            started = time.monotonic()
            results = []
            for partition in context.partition_keys:  # a range arrives as one run: ingest its keys in order
                with dagster_failures(retries=resource.transient_retries, wait_seconds=resource.retry_wait_seconds):
                    result = feed.ingest(partition)
                resource.log_jvm(feed, context.log)
                context.log.info(result.summary())
                results.append(result)
            return MaterializeResult(
                asset_key=held.key,
                metadata=md.ingest_metadata(feed, results, feed.status(), seconds=time.monotonic() - started),
            )

    return _held


def build_stream_asset(spec: FeedSpec, translator: WaterlineTranslator, *, resource_key: str = RESOURCE_KEY):
    """``[feed, "held"]`` of a stream feed: a materialization drains what the Kafka topics hold
    now (`Feed.stream(once=True)`), each micro-batch exactly once, releasing tiers whose rows
    are due at once; the offsets reached are its metadata."""
    held = translator.get_asset_spec(spec, HELD)

    @multi_asset(name=held.key.to_python_identifier(), specs=[held], required_resource_keys={resource_key})
    def _drain(context: AssetExecutionContext) -> MaterializeResult:
        resource: WaterlineResource = getattr(context.resources, resource_key)
        feed = resource.get_feed(spec)
        started = time.monotonic()
        with (dagster_failures(retries=resource.transient_retries, wait_seconds=resource.retry_wait_seconds),
              feed.stoppable("stream")):  # a run's termination (SIGTERM): ended within the grace, lease given back
            run = feed.stream(once=True, on_batch=lambda batch: context.log.info(batch.summary()))
        resource.log_jvm(feed, context.log)
        context.log.info(run.summary())
        return MaterializeResult(asset_key=held.key,
                                 metadata=md.stream_metadata(run, feed.status(), seconds=time.monotonic() - started))

    return _drain


def build_tier_assets(spec: FeedSpec, translator: WaterlineTranslator, *, resource_key: str = RESOURCE_KEY):
    """One ``multi_asset`` releasing every tier: ``[feed, tier]`` with DataVersion = W_T."""
    held_key = translator.get_asset_key(spec, HELD)
    specs = {tier: translator.get_asset_spec(spec, tier) for tier in spec.tiers}

    @multi_asset(
        name=f"{spec.feed}_release_tiers",
        specs=list(specs.values()),
        can_subset=False,  # one release advances every tier not on hold, in one lease
        required_resource_keys={resource_key},
        description=f"Release every tier of feed {spec.feed} to the current waterline.",
    )
    def _release(context: AssetExecutionContext):
        resource: WaterlineResource = getattr(context.resources, resource_key)
        feed = resource.get_feed(spec)
        if feed.status().seq == 0:
            raise Failure(
                description=(f"feed {spec.feed}: nothing ingested yet; materialize a partition of "
                             f"{held_key.to_user_string()} first"),
                allow_retries=False,
            )
        due_us = due_tag(context.run.tags)
        if line := arming_line(spec.feed, due_us, feed.clock.now_us()):
            context.log.info(line)
        started = time.monotonic()
        with (dagster_failures(retries=resource.transient_retries, wait_seconds=resource.retry_wait_seconds),
              feed.stoppable("release")):  # a run's termination (SIGTERM): ended within the grace, lease given back
            run = feed.release_run(due_us)
        resource.log_jvm(feed, context.log)
        lags = [lag / 1e6 for _, lag in run.lags]
        for moment, lag in run.lags:
            context.log.info(f"{spec.feed}: released {lag / 1e6:.3f} s after the due moment {format_instant(moment)}")
        seconds = time.monotonic() - started
        now = feed.clock.now_us()
        for tier, tier_result in run.result.tiers.items():
            context.log.info(tier_result.summary(spec.feed))
            yield MaterializeResult(
                asset_key=specs[tier].key,
                data_version=None if tier_result.w_us is None else DataVersion(str(tier_result.w_us)),
                metadata=md.release_metadata(feed, tier, tier_result, now_us=now, seconds=seconds)
                | lag_metadata(due_us, now, tier_result, lags),
            )

    return _release


def due_tag(tags) -> int | None:
    """The due moment (µs) the sensor requested this run for (tag ``waterline/due_us``), if any."""
    raw = tags.get(DUE_TAG)
    try:
        return None if raw is None else int(raw)
    except ValueError:
        return None


def lag_metadata(due_us: int | None, commit_us: int, tier_result: TierRelease, lags: list[float] | None = None) -> dict:
    """``waterline/release_lag_seconds``: commit time minus the due moment the run was for;
    with several due moments released by one pre-armed run, the worst of them and their count."""
    if due_us is None or due_us <= NEG_INF or tier_result.held or tier_result.w_us is None or tier_result.w_us < due_us:
        return {}
    if not lags:
        return {"waterline/release_lag_seconds": round((commit_us - due_us) / 1e6, 3)}
    return {"waterline/release_lag_seconds": round(max(lags), 3), "waterline/due_moments_released": len(lags)}
