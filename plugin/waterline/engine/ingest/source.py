"""Produce one partition's processed output: sources -> views -> transform -> job."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from waterline.engine.spark.functions import register_functions
from waterline.engine.spark.errors import first_line, hint
from waterline.errors import WaterlineError
from waterline.spec import FeedSpec

SOURCE_COLUMN = "_wl_source"
CORRUPT = "_wl_corrupt_record"
_TEXT_FORMATS = ("json", "csv")
_READ_DEFAULTS = {"csv": {"header": "true"}}


def read_output(spark: SparkSession, spec: FeedSpec, partition: str) -> DataFrame:
    """Register each source as a view, then apply `transform` and/or `job`."""
    return read_output_and_unparsed(spark, spec, partition)[0]


def read_output_and_unparsed(spark: SparkSession, spec: FeedSpec,
                             partition: str) -> tuple[DataFrame, DataFrame | None]:
    """The output (as `read_output`) and the source records that could not be parsed.

    Text sources (json, csv) are read in PERMISSIVE mode with a corrupt-record column:
    a record the reader cannot parse (a truncated or non-JSON line, a CSV line with the
    wrong number of fields or a value of the wrong type for a declared schema) is kept
    with its raw text (columns ``_wl_reason``, ``_wl_row``) for the quarantine, and never
    reaches the transform. None when no source can have such records.
    """
    several = len(spec.sources) > 1
    frames, unparsed = {}, []
    for name, source in spec.sources.items():
        df = _read_source(spark, spec, name, source, partition, missing_ok=several)
        if df is None:
            continue
        # Only a text reader in PERMISSIVE mode keeps unparsed records (and asking a frame
        # for its columns is a round trip under Spark Connect).
        if _keeps_unparsed(source) and CORRUPT in df.columns:
            bad, df = _split_unparsed(df, name, source.format)
            unparsed.append(bad)
        if several:
            df = df.withColumn(SOURCE_COLUMN, F.lit(name))
        frames[name] = df
        df.createOrReplaceTempView(name)
    if not frames:
        raise WaterlineError(f"feed {spec.feed}: partition {partition}: no source has data")
    union = None
    for df in frames.values():
        union = df if union is None else union.unionByName(df, allowMissingColumns=True)
    if list(frames) != ["source"]:  # one source named "source" is that view already
        union.createOrReplaceTempView("source")
    out = union
    if spec.transform:
        register_functions(spark, spec.transform)  # transforms may call wl_* calendar functions too
        sql = spec.transform.replace("{partition}", partition)
        try:
            out = spark.sql(sql)
        except Exception as exc:  # Spark's analysis errors span many lines; keep the first
            raise WaterlineError(
                f"feed {spec.feed}: partition {partition}: transform: {first_line(exc)}{hint(exc)}") from exc
    bad = None
    for part in unparsed:
        bad = part if bad is None else bad.unionByName(part)
    if spec.job:
        job = spec.job_callable()
        try:
            out = job(spark, out, partition)
        except WaterlineError:
            raise
        except Exception as exc:  # the user's own code: name it, keep its message
            raise WaterlineError(
                f"feed {spec.feed}: partition {partition}: job {spec.job}: {first_line(exc)}{hint(exc)}") from exc
    return out, bad


def _split_unparsed(df: DataFrame, name: str, fmt: str) -> tuple[DataFrame, DataFrame]:
    """(unparsed records as quarantine rows, the parsed rows without the corrupt column)."""
    others = [c for c in df.columns if c != CORRUPT]
    if not others:  # every record failed schema inference; Spark cannot query the corrupt column alone
        df = df.cache()
    reason = F.lit(f"could not be parsed as {fmt} (source {name})")
    if others:
        # The fields the reader did get, when any: they help find the fault. Referencing them
        # also keeps Spark from refusing a query of the raw file's corrupt column alone.
        read = F.to_json(F.struct(*[F.col(f"`{c}`") for c in others]))
        reason = F.when(read == "{}", reason).otherwise(F.concat(reason, F.lit("; fields read: "), read))
    bad = df.filter(F.col(CORRUPT).isNotNull()).select(reason.alias("_wl_reason"), F.col(CORRUPT).alias("_wl_row"))
    return bad, df.filter(F.col(CORRUPT).isNull()).drop(CORRUPT)


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
    text = _keeps_unparsed(source)
    if text:  # keep every record the reader cannot parse, with its raw text
        options["columnNameOfCorruptRecord"] = CORRUPT
    reader = spark.read.format(source.format).options(**options)
    try:
        if text and source.format == "csv" and not schema:
            # CSV fills the corrupt column only when the schema names it: take the inferred one.
            schema = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in reader.load(path).schema.fields)
        if schema and text:
            schema = f"{schema}, `{CORRUPT}` STRING"
        if schema:
            reader = reader.schema(schema)
        return reader.load(path)
    except Exception as exc:
        raise WaterlineError(f"feed {spec.feed}: source {name}: cannot read {path}: {first_line(exc)}") from exc


def _keeps_unparsed(source) -> bool:
    """A text source read in PERMISSIVE mode: its reader keeps what it cannot parse in `CORRUPT`."""
    mode = str((source.options or {}).get("mode", "PERMISSIVE")).upper()
    return source.format in _TEXT_FORMATS and mode == "PERMISSIVE"
