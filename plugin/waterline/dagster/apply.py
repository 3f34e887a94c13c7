"""``<feed>_apply``: a job that runs `waterline.Feed.apply`, the Dagster way to make a spec change take effect.

docs/semantics.md, "When the spec changes": a change to what a feed publishes or when (its
tiers, policies, columns, waterline, time zone) takes effect only when it is applied; until
then the release sensor skips with "spec not applied: ...". Deploying the changed spec file
and launching this job (from the UI or ``dagster job launch``) applies it under the feed
lease; the next sensor tick releases under the new spec version. A refused change fails the
run with the CLI's one-line message. Retiring a tier or adding a column needs no Spark; a tier
added or a policy changed starts the resource's Spark (held is rescheduled and the new tier
built at the feed's W), its JVM output in its log file as for every run.
"""

from dagster import JobDefinition, MetadataValue, OpExecutionContext, in_process_executor, job, op

from waterline.dagster.errors import dagster_failures
from waterline.dagster.resources import RESOURCE_KEY, WaterlineResource
from waterline.spec import FeedSpec


def apply_job_name(spec: FeedSpec) -> str:
    return f"{spec.feed}_apply"


def build_apply_job(spec: FeedSpec, *, resource_key: str = RESOURCE_KEY) -> JobDefinition:
    """The job ``<feed>_apply``: one op calling ``Feed.apply()``; the spec version in force after
    it and what changed are the op's metadata."""

    @op(name=f"{spec.feed}_apply_spec", required_resource_keys={resource_key},
        description=f"Make the deployed spec of feed {spec.feed} its applied spec (waterline apply).")
    def _apply(context: OpExecutionContext) -> None:
        resource: WaterlineResource = getattr(context.resources, resource_key)
        feed = resource.get_feed(spec)
        with dagster_failures(retries=resource.transient_retries, wait_seconds=resource.retry_wait_seconds):
            applied, diff = feed.apply()
        resource.log_jvm(feed, context.log)
        changes = diff.lines()
        context.log.info(f"feed {spec.feed}: spec version {applied.version} "
                         + (f"applied: {'; '.join(changes)}" if changes else "in force, nothing to apply"))
        context.add_output_metadata({
            "spec version": MetadataValue.int(applied.version),
            "spec hash": MetadataValue.text(applied.hash),
            "changes": MetadataValue.md("\n".join(f"- {line}" for line in changes) if changes else "nothing"),
        })

    @job(name=apply_job_name(spec), executor_def=in_process_executor,
         description=f"Apply the deployed spec of feed {spec.feed} (docs/operations.md).",
         tags={"waterline/feed": spec.feed, "waterline/op": "apply"})
    def _job() -> None:
        _apply()

    return _job


__all__ = ["apply_job_name", "build_apply_job"]
