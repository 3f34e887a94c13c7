"""``definitions_from_specs``: every feed's assets, checks, jobs and sensor in one Definitions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Union

from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    ExecutorDefinition,
    define_asset_job,
    in_process_executor,
)

from waterline.dagster.apply import build_apply_job
from waterline.dagster.assets import build_held_asset, build_tier_assets
from waterline.dagster.checks import build_quarantine_check, build_tier_checks
from waterline.dagster.audit_report import build_audit_report_asset
from waterline.dagster.proof_check import (
    build_audit_job,
    build_audit_schedule,
    build_release_proof_check,
    proof_check_keys,
)
from waterline.dagster.maintenance import build_maintain_job, build_maintain_schedule
from waterline.dagster.sensors import build_release_sensor, release_job_name
from waterline.dagster.resources import RESOURCE_KEY, WaterlineResource, default_resource, from_pyspark_resource
from waterline.dagster.translator import HELD, WaterlineTranslator
from waterline.errors import WaterlineError
from waterline.feed import SessionConfig
from waterline.spec import FeedSpec
from waterline.spec.loader import load_feed_specs

SpecLike = Union[str, Path, FeedSpec]
RELEASE_CONCURRENCY_TAG = "waterline/release_feed"
"""Tag on every ``<feed>_release`` run, valued with the feed: an instance's
``tag_concurrency_limits`` entry on it with ``applyLimitPerUniqueValue`` and limit 1
never runs two releases of one feed at once (docs/dagster.md)."""


def ingest_job_name(spec: FeedSpec) -> str:
    return f"{spec.feed}_ingest"


def definitions_from_specs(
    paths_or_specs: SpecLike | Iterable[SpecLike],
    *,
    translator: WaterlineTranslator | None = None,
    base_dir: str | Path | None = None,
    default_sensor_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
    executor: ExecutorDefinition | None = in_process_executor,
    resource: WaterlineResource | None = None,
    pyspark: Any = None,
) -> Definitions:
    """Dagster definitions for feeds given as FeedSpecs or spec YAML paths.

    Per feed: the partitioned asset ``[feed, "held"]`` (ingest; single-run
    backfills), one asset ``[feed, tier]`` per tier (release, DataVersion =
    W_T), the jobs ``<feed>_release`` (all tiers), ``<feed>_ingest``
    (partitioned, for ``dagster job backfill``), ``<feed>_maintain`` and ``<feed>_apply``
    (`Feed.apply`: a deployed spec change takes effect), the sensor
    ``<feed>_release_sensor``, the schedule ``<feed>_maintain_schedule`` (started
    with the sensor: ``default_sensor_status``) and the asset checks. Runs get their `waterline.Feed`
    from the ``waterline`` resource: ``resource`` if given, else a shared
    `WaterlineResource` following the specs' ``spark:`` key and the environment
    (``pyspark``, a dagster-pyspark ``PySparkResource``, is still accepted: its
    master/remote and conf configure the resource).

    ``executor`` is the Definitions' default executor, used by materializations
    outside the feed's own jobs (the UI's asset materializations, ad-hoc
    selections); it defaults to the in-process executor so such a run starts one
    JVM, not one per step. ``None`` leaves it to Dagster's default or to
    definitions merged with these. ``<feed>_release`` and ``<feed>_ingest``
    always run in-process: one lease, one session.
    Relative spec paths resolve against ``base_dir`` (default: the working
    directory), as ``load_spec`` does.
    """
    translator = translator or WaterlineTranslator()
    specs = load_feed_specs(paths_or_specs, base_dir=base_dir)
    if resource is None:
        resource = from_pyspark_resource(pyspark) if pyspark is not None else default_resource(_session_config(specs))

    assets, checks, jobs, sensors, schedules = [], [], [], [], []
    for spec in specs:
        held = build_held_asset(spec, translator, resource_key=RESOURCE_KEY)
        tiers = build_tier_assets(spec, translator, resource_key=RESOURCE_KEY)
        report = build_audit_report_asset(spec, translator, resource_key=RESOURCE_KEY)
        assets += [held, tiers, report]
        checks += [
            build_tier_checks(spec, translator, resource_key=RESOURCE_KEY),
            build_quarantine_check(spec, translator),
            build_release_proof_check(spec, translator, resource_key=RESOURCE_KEY),
        ]
        release_job = _release_job(spec, translator)
        ingest_job = _ingest_job(spec, translator)
        maintain_job = build_maintain_job(spec, resource_key=RESOURCE_KEY)
        audit_job = build_audit_job(spec, translator)
        jobs += [release_job, ingest_job, maintain_job, audit_job, build_apply_job(spec, resource_key=RESOURCE_KEY)]
        sensors.append(build_release_sensor(spec, job=release_job, default_status=default_sensor_status))
        schedule_status = DefaultScheduleStatus(default_sensor_status.value)
        schedules += [build_maintain_schedule(spec, maintain_job, default_status=schedule_status),
                      build_audit_schedule(spec, audit_job, default_status=schedule_status)]
    return Definitions(
        assets=assets,
        asset_checks=checks,
        jobs=jobs,
        sensors=sensors,
        schedules=schedules,
        resources={RESOURCE_KEY: resource},
        executor=executor,
    )


def _release_job(spec: FeedSpec, translator: WaterlineTranslator) -> Any:
    """``<feed>_release``: every tier asset and its checks, in-process, one release of a feed at a time."""
    tier_keys = [translator.get_asset_key(spec, tier) for tier in spec.tiers]
    return define_asset_job(
        release_job_name(spec),
        # the release proof runs in <feed>_audit: a release run stays one release and its checks
        selection=AssetSelection.assets(*tier_keys) - AssetSelection.checks(*proof_check_keys(spec, translator)),
        executor_def=in_process_executor,
        description=f"Release every tier of feed {spec.feed} to the current waterline, then check the tiers.",
        tags={"waterline/feed": spec.feed, "waterline/op": "release", RELEASE_CONCURRENCY_TAG: spec.feed},
    )


def _ingest_job(spec: FeedSpec, translator: WaterlineTranslator) -> Any:
    """``<feed>_ingest``: the held asset, in-process (a partitioned job for `dagster job backfill`)."""
    return define_asset_job(
        ingest_job_name(spec),
        selection=AssetSelection.assets(translator.get_asset_key(spec, HELD)),
        executor_def=in_process_executor,
        description=(f"Drain the Kafka topics of feed {spec.feed} into its held table." if spec.is_stream else
                     f"Ingest partitions of feed {spec.feed} into its held table (one run per partition)."),
        tags={"waterline/feed": spec.feed, "waterline/op": "ingest"},
    )


def _session_config(specs: list[FeedSpec]) -> SessionConfig:
    """The Spark of the shared resource: the specs' `spark:` key (they must agree), then the env."""
    keys = {json.dumps(spec.spark.to_dict() if spec.spark else None, sort_keys=True) for spec in specs}
    if len(keys) > 1:
        names = ", ".join(f"{s.feed}: {s.spark.to_dict() if s.spark else 'default'}" for s in specs)
        raise WaterlineError(f"spark: feeds in one Definitions must share one Spark ({names}); pass resource=")
    return SessionConfig.for_spec(specs[0].spark if specs else None)
