"""Produce one partition's processed output: sources -> views -> transform -> job."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from waterline.errors import WaterlineError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from waterline.spec import FeedSpec

SOURCE_COLUMN = "_wl_source"
_READ_DEFAULTS = {"csv": {"header": "true"}}


def read_output(spark: "SparkSession", spec: "FeedSpec", partition: str) -> "DataFrame":
    """Register each source as a view, then apply `transform` and/or `job`."""
    from pyspark.sql import functions as F

    several = len(spec.sources) > 1
    frames = {}
    for name, source in spec.sources.items():
        df = _read_source(spark, spec, name, source, partition, missing_ok=several)
        if df is None:
            continue
        if several:
            df = df.withColumn(SOURCE_COLUMN, F.lit(name))
        frames[name] = df
        df.createOrReplaceTempView(name)
    if not frames:
        raise WaterlineError(f"feed {spec.feed}: partition {partition}: no source has data")
    union = None
    for df in frames.values():
        union = df if union is None else union.unionByName(df, allowMissingColumns=True)
    union.createOrReplaceTempView("source")
    out = union
    if spec.transform:
        from waterline.engine.functions import register_functions

        register_functions(spark, spec.transform)  # transforms may call wl_* calendar functions too
        sql = spec.transform.replace("{partition}", partition)
        try:
            out = spark.sql(sql)
        except Exception as exc:  # Spark's analysis errors span many lines; keep the first
            raise WaterlineError(f"feed {spec.feed}: transform: {_first_line(exc)}") from exc
    if spec.job:
        out = spec.job_callable()(spark, out, partition)
    return out


def _read_source(spark, spec, name, source, partition, *, missing_ok: bool):
    path = spec.source_path(name, partition)
    if "://" not in path and not Path(path).exists():
        if missing_ok:
            return None
        raise WaterlineError(f"feed {spec.feed}: source {name}: no data at {path} for partition {partition}")
    # Timestamps the reader itself parses (declared in a schema) follow the feed's zone.
    options = {"timeZone": spec.timezone, **_READ_DEFAULTS.get(source.format, {})}
    options.update(source.options or {})
    # A DDL `schema` option pins the columns: an empty partition still has them.
    schema = options.pop("schema", None)
    reader = spark.read.format(source.format).options(**options)
    if schema:
        reader = reader.schema(schema)
    try:
        return reader.load(path)
    except Exception as exc:
        raise WaterlineError(f"feed {spec.feed}: source {name}: cannot read {path}: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
