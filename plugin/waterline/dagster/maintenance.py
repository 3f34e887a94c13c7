"""``<feed>_maintain``: a job that runs `waterline.Feed.maintain`, and the schedule that runs it.

Every release adds small files and a commit to each tier; the job compacts,
vacuums, checkpoints and cleans them (docs/engine.md, "Maintenance") on the
spec's ``maintenance.every`` (hourly by default), as the schedule
``<feed>_maintain_schedule``. It takes the feed lease like a release, so the
two never commit at once; a release due meanwhile waits for the lease.
"""


from dagster import (
    DefaultScheduleStatus,
    JobDefinition,
    MetadataValue,
    OpExecutionContext,
    ScheduleDefinition,
    in_process_executor,
    job,
    op,
)

from waterline.dagster.errors import dagster_failures
from waterline.dagster.resources import RESOURCE_KEY, WaterlineResource
from waterline.clock import duration_text
from waterline.spec import FeedSpec


def maintain_job_name(spec: FeedSpec) -> str:
    return f"{spec.feed}_maintain"


def maintain_schedule_name(spec: FeedSpec) -> str:
    return f"{spec.feed}_maintain_schedule"


def build_maintain_job(spec: FeedSpec, *, resource_key: str = RESOURCE_KEY) -> JobDefinition:
    """The job ``<feed>_maintain``: one op calling ``Feed.maintain()``; what it did is the op's metadata."""

    @op(name=f"{spec.feed}_maintain_tables", required_resource_keys={resource_key},
        description=f"Compact, vacuum, checkpoint and clean feed {spec.feed}'s tables.")
    def _maintain(context: OpExecutionContext) -> None:
        resource: WaterlineResource = getattr(context.resources, resource_key)
        feed = resource.get_feed(spec)
        with dagster_failures(retries=resource.transient_retries, wait_seconds=resource.retry_wait_seconds):
            result = feed.maintain()
        resource.log_jvm(feed, context.log)
        metadata = {}
        for name, table in result.tables.items():
            context.log.info(table.summary(result.feed))
            metadata[f"{name} files"] = MetadataValue.int(table.files_after)
            metadata[f"{name} compacted"] = MetadataValue.int(table.files_compacted)
            metadata[f"{name} vacuumed"] = MetadataValue.int(table.files_vacuumed)
        context.add_output_metadata(metadata)

    @job(name=maintain_job_name(spec), executor_def=in_process_executor,
         description=f"Maintain feed {spec.feed}'s tables (docs/engine.md, Maintenance).",
         tags={"waterline/feed": spec.feed, "waterline/op": "maintain"})
    def _job() -> None:
        _maintain()

    return _job


def build_maintain_schedule(spec: FeedSpec, maintain_job: JobDefinition, *,
                            default_status: DefaultScheduleStatus = DefaultScheduleStatus.STOPPED
                            ) -> ScheduleDefinition:
    """``<feed>_maintain_schedule``: the maintain job every ``maintenance.every``."""
    return ScheduleDefinition(name=maintain_schedule_name(spec), job=maintain_job,
                              cron_schedule=spec.maintenance.cron,
                              execution_timezone="UTC", default_status=default_status,
                              description=f"Maintain feed {spec.feed} every {duration_text(spec.maintenance.every)}.")
