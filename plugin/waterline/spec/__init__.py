"""Feed specs: the YAML contract of a feed, as validated frozen dataclasses.

    spec = load_spec("dags/feeds/ticks.yaml", overrides={"warehouse": str(tmp)})
    spec.partitions.keys("2026-01-05", "2026-01-07")
    spec.source_path("source", "2026-01-05")   # absolute path for that partition
    spec.tier_path("delayed_15m")              # <warehouse>/<feed>/tiers/delayed_15m

Every error is a one-line `SpecError`: ``spec <file>: <key.path>: <what is wrong>``.

Sources and the transform: each source is registered as a Spark view named
after it, and the view ``source`` is the union of all sources (by column name;
with several sources the engine tags rows with the source's name). A spec
written with the single ``source:`` key has one source named ``source``.
``transform`` is Spark SQL over those views; ``job`` (``module:function``,
called ``fn(spark, df, partition)``) runs on the transform's result, or on the
``source`` union when there is no transform. With neither, the ``source``
rows are the feed's output as read.

This package imports no Spark and no Dagster.
"""

from waterline.errors import SpecError
from waterline.spec.loader import deep_merge, load_spec, load_specs, spec_from_dict
from waterline.spec.model import (
    DEFAULT_SOURCE,
    LATE_POLICIES,
    SOURCE_FORMATS,
    WATERLINE_MODES,
    FeedSpec,
    MaintenanceSpec,
    SourceSpec,
    WaterlineSpec,
)
from waterline.spec.partitions import PartitionScheme

__all__ = [
    "DEFAULT_SOURCE",
    "LATE_POLICIES",
    "SOURCE_FORMATS",
    "WATERLINE_MODES",
    "FeedSpec",
    "MaintenanceSpec",
    "PartitionScheme",
    "SourceSpec",
    "SpecError",
    "WaterlineSpec",
    "deep_merge",
    "load_spec",
    "load_specs",
    "spec_from_dict",
]
