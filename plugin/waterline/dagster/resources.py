"""`WaterlineResource`: the Dagster resource that hands runs a `waterline.Feed`.

Modelled on dagster-sling's and dagster-dbt's resources: configuration lives
on the resource, the work on the object it returns. A `Feed` starts Spark only
when a run first needs it (an ingest, a release, a check's Spark pass), with
the JVM's own output in its log file (`waterline.engine.spark.jvm_log`), not in
the run worker's stderr; creating the resource, and the release sensor, start
none. Importing this module imports no pyspark.
"""

from __future__ import annotations

import json
from typing import Any

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from waterline.feed import SessionConfig, SparkSettings
from waterline.feed import Feed
from waterline.spec import FeedSpec

RESOURCE_KEY = "waterline"


class WaterlineResource(ConfigurableResource):
    """Feeds for Dagster runs, and how their Spark and their transient failures are handled.

    ``spark_master``/``spark_remote``/``spark_conf`` say where Spark runs (default:
    ``local[2]``; `definitions_from_specs` fills them from the specs' ``spark:`` key
    and ``WATERLINE_SPARK_MASTER``/``_REMOTE``). A step that meets a transient error
    (the feed lease busy or lost, a commit race lost) is retried
    ``transient_retries`` times, ``retry_wait_seconds`` apart, then fails as a
    retryable failure (the instance's run retries may take it from there).
    """

    spark_master: str | None = Field(default=None, description="A classic master: local[N], spark://host:port ...")
    spark_remote: str | None = Field(default=None, description="A Spark Connect URL sc://host:port (no JVM in the run).")
    spark_conf: dict[str, str] = Field(default_factory=dict, description="Spark conf added to waterline's.")
    transient_retries: int = Field(default=3, description="Step retries after a busy or lost lease, or a lost race.")
    retry_wait_seconds: float = Field(default=30.0, description="Seconds between those retries.")

    # One Feed per feed for the life of the run: the session starts once, whatever number
    # of assets and checks of the run use it. Keyed by the feed's name and warehouse, each
    # key's Feeds told apart by spec equality (a FeedSpec holds dicts: it is not hashable).
    _feeds: dict[tuple[str, str], list[Feed]] = PrivateAttr(default_factory=dict)
    _context: InitResourceContext | None = PrivateAttr(default=None)

    @classmethod
    def for_config(cls, config: SessionConfig, **options: Any) -> "WaterlineResource":
        """The resource for a session config (`SessionConfig.for_spec`)."""
        return cls(spark_master=None if config.remote else config.master, spark_remote=config.remote,
                   spark_conf=dict(config.conf), **options)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self._context = context

    def session_config(self) -> SessionConfig:
        """Where the feeds of this resource run Spark."""
        settings = SparkSettings(master=self.spark_master, remote=self.spark_remote, conf=self.spark_conf)
        return SessionConfig.resolve(settings, env=False, app_name="waterline-dagster")

    def get_feed(self, spec: FeedSpec, *, spark: Any = None) -> Feed:
        """The `Feed` of ``spec`` for this run; ``spark`` (a running session) overrides the resource's Spark."""
        if spark is not None:
            return Feed(spec, spark=spark)
        feeds = self._feeds.setdefault((spec.feed, str(spec.warehouse)), [])
        for feed in feeds:
            if feed.spec == spec:
                return feed
        feed = Feed(spec, spark=self.session_config())
        feeds.append(feed)
        return feed

    def log_jvm(self, feed: Feed, log) -> None:
        """Say once where the JVM a run started writes its own output (the run's stderr stays clean)."""
        if (path := feed.take_jvm_log()) is not None:
            log.info(f"Spark: the JVM's own log is {path} (WATERLINE_JVM_LOG)")


_SHARED: dict[str, WaterlineResource] = {}


def default_resource(config: SessionConfig | None = None) -> WaterlineResource:
    """One shared instance per Spark config, so definitions of several feeds merge without conflicts.

    ``config`` defaults to the environment (WATERLINE_SPARK_MASTER / _REMOTE, else local)."""
    return shared_resource(WaterlineResource.for_config(config or SessionConfig.from_env()))


def shared_resource(resource: WaterlineResource) -> WaterlineResource:
    """The one instance configured as ``resource`` (Definitions merge only identical resources)."""
    key = json.dumps(resource.model_dump(), sort_keys=True)
    return _SHARED.setdefault(key, resource)


def from_pyspark_resource(pyspark: Any) -> WaterlineResource:
    """A `WaterlineResource` with the master/remote and conf of a dagster-pyspark ``PySparkResource``
    (``definitions_from_specs(pyspark=...)``, the keyword of earlier releases)."""
    conf = {str(k): str(v) for k, v in (getattr(pyspark, "spark_config", None) or {}).items()}
    remote, master = conf.pop("spark.remote", None), conf.pop("spark.master", None)
    conf.pop("spark.app.name", None)
    return WaterlineResource(spark_master=None if remote else master, spark_remote=remote, spark_conf=conf)
