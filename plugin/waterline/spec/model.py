"""The feed spec as frozen dataclasses. Built and validated by `waterline.spec.loader`."""

from __future__ import annotations

import importlib
import string
import sys
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

from waterline.errors import SpecError
from waterline.clock import duration_text
from waterline.spec.partitions import PartitionScheme
from waterline.spec.spark import SparkSpec

SOURCE_FORMATS = ("json", "csv", "parquet", "delta")
#: A stream source (read by `waterline stream`, never by partition).
STREAM_FORMAT = "kafka"
#: How a Kafka record's value is decoded for the transform (absent: the raw bytes).
KAFKA_VALUE_FORMATS = ("json", "csv", "avro")
#: How an Avro value is framed: the bare datum, or Confluent's wire format (a zero magic
#: byte and a 4-byte schema id before the datum, as Schema Registry serializers write).
KAFKA_AVRO_WIRES = ("plain", "confluent")
LATE_POLICIES = ("publish", "drop", "quarantine")
WATERLINE_MODES = ("clock", "event")
# The name of the source when the spec uses the single `source:` key, and the
# view holding the union of all sources.
DEFAULT_SOURCE = "source"
# Placeholders a source path may contain, by partition kind.
PATH_PLACEHOLDERS = {
    "daily": ("partition", "date"),
    "hourly": ("partition", "date", "hour"),
    "static": ("partition",),
}

#: Default `release_lead_seconds`: a Dagster run's launch plus a JVM start took up to
#: ~30 s on a 2-core machine (docs/benchmarks-history.md, release latency before pre-staging), plus a margin.
DEFAULT_LEAD_SECONDS = 45


@dataclass(frozen=True)
class KafkaSpec:
    """A Kafka source: where, which topics, how values decode, where a first run starts.

    ``value_schema`` is a Spark DDL schema of the decoded value (``value_format`` json or
    csv) or an Avro schema as JSON text (avro, framed as ``value_wire`` says); with no
    format the transform sees the value's bytes. Credentials are never here:
    `waterline.engine.ingest.stream.source` reads them from the environment.
    """

    bootstrap: str
    topics: tuple[str, ...]
    value_format: str | None = None
    value_schema: str | None = None
    starting_offsets: str = "earliest"
    value_wire: str = "plain"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"bootstrap": self.bootstrap}
        if len(self.topics) == 1:
            out["topic"] = self.topics[0]
        else:
            out["topics"] = list(self.topics)
        if self.value_format is not None:
            out["value"] = {"format": self.value_format, "schema": self.value_schema}
            if self.value_wire != "plain":
                out["value"]["wire"] = self.value_wire
        if self.starting_offsets != "earliest":
            out["starting_offsets"] = self.starting_offsets
        return out


@dataclass(frozen=True)
class SourceSpec:
    """One input: a Spark reader ``format``, a ``path`` template and reader ``options``.

    ``path`` is absolute (or a URI) and may hold ``{partition}`` (the key),
    and for time partitions ``{date}`` (``YYYY-MM-DD``) and, hourly, ``{hour}``
    (``HH``): Hadoop paths cannot hold the ``:`` of hourly keys, so hourly
    sources use ``.../{date}/{hour}/``.
    """

    format: str
    path: str
    options: dict[str, str] = field(default_factory=dict)
    kafka: KafkaSpec | None = None  # format kafka: the stream's topics (``path`` is empty)

    @property
    def is_stream(self) -> bool:
        return self.kafka is not None

    def path_for(self, partition: str) -> str:
        """The path of this source's data for one (already validated) partition key."""
        values = {"partition": partition, "date": partition[:10], "hour": partition[11:13]}
        return self.path.format(**values)

    def placeholders(self) -> set[str]:
        return {name for _, name, _, _ in string.Formatter().parse(self.path) if name is not None}

    def to_dict(self) -> dict[str, Any]:
        if self.kafka is not None:
            out: dict[str, Any] = {"format": self.format, **self.kafka.to_dict()}
        else:
            out = {"format": self.format, "path": self.path}
        if self.options:
            out["options"] = dict(self.options)
        return out


@dataclass(frozen=True)
class WaterlineSpec:
    """How the feed's waterline W advances.

    ``clock``: W = now. ``event``: W = max event time seen minus ``lateness``
    (capped at now); with several sources, the minimum over sources that got
    data within ``idle_after`` (``None``: a source is never considered idle).
    """

    mode: str = "clock"
    lateness: timedelta = timedelta(0)
    idle_after: timedelta | None = None

    @property
    def lateness_us(self) -> int:
        return _micros(self.lateness)

    @property
    def idle_after_us(self) -> int | None:
        return None if self.idle_after is None else _micros(self.idle_after)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode}
        if self.mode == "event":
            out["lateness"] = duration_text(self.lateness)
            if self.idle_after is not None:
                out["idle_after"] = duration_text(self.idle_after)
        return out


#: The shortest `maintenance.time_travel`: a vacuum must never delete a file a staged release
#: (committed within 30 minutes of staging) or a signed sharing URL (15 minutes by default)
#: may still name.
MIN_TIME_TRAVEL = timedelta(hours=1)


@dataclass(frozen=True)
class MaintenanceSpec:
    """How `waterline maintain` keeps the feed's tables (spec key ``maintenance:``).

    ``time_travel``: how long a tier's past versions stay readable (``Feed.read(version=...)``,
    Delta time travel, change feeds, Delta Sharing queries of a version): maintenance vacuums
    files unreferenced for longer, and keeps the log that long. ``every``: how often the
    orchestrators run it (a Dagster schedule, an Airflow DAG).
    """

    time_travel: timedelta = timedelta(days=7)
    every: timedelta = timedelta(hours=1)

    @property
    def time_travel_us(self) -> int:
        return _micros(self.time_travel)

    @property
    def every_seconds(self) -> int:
        return _micros(self.every) // 1_000_000

    @property
    def cron(self) -> str:
        """``every`` as a cron schedule (the loader checked that it divides an hour or a day)."""
        minutes = self.every_seconds // 60
        if minutes < 60:
            return f"*/{minutes} * * * *" if minutes > 1 else "* * * * *"
        hours = minutes // 60
        if hours < 24:
            return f"0 */{hours} * * *" if hours > 1 else "0 * * * *"
        return "0 0 * * *"

    def to_dict(self) -> dict[str, Any]:
        return {"time_travel": duration_text(self.time_travel), "every": duration_text(self.every)}


@dataclass(frozen=True)
class FeedSpec:
    """A validated feed spec (see DESIGN.md, "Public surface").

    ``sources`` always maps source names to sources: a spec written with the
    single ``source:`` key has one source named ``"source"``. ``tiers`` keeps
    the YAML order. Paths are absolute. ``warehouse`` is a local folder (a
    ``Path``) or an object-store URI kept as written (``s3a://bucket/prefix``,
    a ``str``); table paths are strings either way.
    """

    feed: str
    warehouse: Path | str
    sources: dict[str, SourceSpec]
    partitions: PartitionScheme
    key: tuple[str, ...]
    event_time: str
    tiers: dict[str, str]
    transform: str | None = None
    job: str | None = None
    timezone: str = "UTC"
    waterline: WaterlineSpec = field(default_factory=WaterlineSpec)
    late: str = "publish"
    release_interval_seconds: int = 30
    # How long before a due moment the release sensor requests the run, which
    # then starts Spark and waits on the trusted clock (0: no pre-arming).
    release_lead_seconds: int = DEFAULT_LEAD_SECONDS
    # Expected lag of a tier whose policy is not a plain delay (Dagster freshness); None: no check.
    freshness_lag_seconds: int | None = None
    description: str | None = None
    spark: SparkSpec | None = None  # where Spark runs (spec key `spark:`); env variables override it
    # Recipient -> the tiers it may read over Delta Sharing (spec key `audiences:`).
    audiences: dict[str, tuple[str, ...]] = field(default_factory=dict)
    maintenance: MaintenanceSpec = field(default_factory=MaintenanceSpec)
    # Stream feeds (Kafka sources): the held partition of a row, and when a record removes its key.
    partition_by: str | None = None
    remove_when: str | None = None
    # The YAML file the spec came from (None when built from a dict) and the
    # folder relative paths resolved against; neither is part of equality.
    spec_file: str | None = field(default=None, compare=False)
    base_dir: Path | None = field(default=None, compare=False, repr=False)

    @property
    def is_stream(self) -> bool:
        """Whether the feed's sources are Kafka topics (`waterline stream`), not partitioned files."""
        return any(source.is_stream for source in self.sources.values())

    # -- tables ---------------------------------------------------------------
    @property
    def feed_dir(self) -> str:
        """``<warehouse>/<feed>``: every Delta table of the feed lives below it."""
        return self._under_warehouse(self.feed)

    @property
    def held_path(self) -> str:
        return self._under_warehouse(self.feed, "held")

    @property
    def quarantine_path(self) -> str:
        return self._under_warehouse(self.feed, "quarantine")

    @property
    def specs_path(self) -> str:
        """``<warehouse>/<feed>/_wl_specs``: the applied spec versions (docs/semantics.md)."""
        return self._under_warehouse(self.feed, "_wl_specs")

    def _under_warehouse(self, *parts: str) -> str:
        # `Path("s3a://b/p")` would collapse the `//`: URIs are joined as text.
        if isinstance(self.warehouse, str):
            return "/".join([self.warehouse.rstrip("/"), *parts])
        return str(self.warehouse.joinpath(*parts))

    def tier_path(self, tier: str) -> str:
        """The Delta table consumers of ``tier`` read."""
        if tier not in self.tiers:
            raise SpecError(f"{self.origin}: tiers.{tier}: no such tier (tiers: {', '.join(self.tiers)})")
        return self._under_warehouse(self.feed, "tiers", tier)

    def kept_tier_path(self, tier: str) -> str:
        """Where ``tier``'s table is, whether or not the spec names it (a retired tier's table
        is kept until dropped)."""
        return self._under_warehouse(self.feed, "tiers", tier)

    # -- sources --------------------------------------------------------------
    def source_path(self, source_name: str, partition: str) -> str:
        """The path to read ``source_name`` from for ``partition`` (validated)."""
        if source_name not in self.sources:
            raise SpecError(f"{self.origin}: sources.{source_name}: no such source (sources: {', '.join(self.sources)})")
        return self.sources[source_name].path_for(self.partitions.validate(partition))

    @property
    def views(self) -> dict[str, tuple[str, ...]]:
        """Spark view name -> the sources it reads, for running ``transform``.

        Each source is a view under its own name, and the view ``source`` is
        the union (by column name) of all of them, so a one-source feed's
        transform reads ``source`` whatever the source is called.
        """
        views = {name: (name,) for name in self.sources}
        views[DEFAULT_SOURCE] = tuple(self.sources)
        return views

    def job_callable(self) -> Callable[..., Any] | None:
        """Import ``job`` (``module:function``); None when the feed has no job.

        The module is looked up on ``sys.path`` and then in ``base_dir``: the
        `waterline` console script does not put the working directory on
        ``sys.path``, yet project modules like ``spark_jobs`` live there.
        """
        if self.job is None:
            return None
        module_name, _, attr = self.job.partition(":")
        if self.base_dir is not None and str(self.base_dir) not in sys.path:
            sys.path.append(str(self.base_dir))
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise SpecError(f"{self.origin}: job: cannot import module {module_name!r}: {exc}") from exc
        fn = getattr(module, attr, None)
        if not callable(fn):
            raise SpecError(f"{self.origin}: job: module {module_name!r} has no function {attr!r}")
        return fn

    # -- serialisation --------------------------------------------------------
    @property
    def origin(self) -> str:
        """``spec <file>`` (or ``spec <feed>``), the prefix of this spec's errors."""
        return f"spec {self.spec_file or self.feed}"

    def to_dict(self) -> dict[str, Any]:
        """A plain dict that `spec_from_dict` turns back into an equal FeedSpec."""
        out: dict[str, Any] = {"feed": self.feed}
        if self.description is not None:
            out["description"] = self.description
        out["warehouse"] = str(self.warehouse)
        if list(self.sources) == [DEFAULT_SOURCE]:
            out["source"] = self.sources[DEFAULT_SOURCE].to_dict()
        else:
            out["sources"] = {name: src.to_dict() for name, src in self.sources.items()}
        out["partitions"] = self.partitions.to_dict()
        if self.transform is not None:
            out["transform"] = self.transform
        if self.job is not None:
            out["job"] = self.job
        out["key"] = list(self.key)
        out["event_time"] = self.event_time
        out["timezone"] = self.timezone
        out["waterline"] = self.waterline.to_dict()
        out["tiers"] = dict(self.tiers)
        out["late"] = self.late
        out["release_interval_seconds"] = self.release_interval_seconds
        out["release_lead_seconds"] = self.release_lead_seconds
        if self.freshness_lag_seconds is not None:
            out["freshness_lag_seconds"] = self.freshness_lag_seconds
        if self.spark is not None:
            out["spark"] = self.spark.to_dict()
        if self.audiences:
            out["audiences"] = {name: list(tiers) for name, tiers in self.audiences.items()}
        if self.maintenance != MaintenanceSpec():
            out["maintenance"] = self.maintenance.to_dict()
        if self.partition_by is not None:
            out["partition_by"] = self.partition_by
        if self.remove_when is not None:
            out["remove_when"] = self.remove_when
        return out


def _micros(value: timedelta) -> int:
    return (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
