"""Row validation at ingest: quarantine reasons, duplicate keys, schema drift."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, TimestampNTZType, TimestampType

from waterline.engine.core import columns as C
from waterline.engine.core.keys import MAX_KEYS_IN_ERROR, duplicate_keys_error
from waterline.engine.core.sqltext import quoted, sql_string
from waterline.errors import WaterlineError
from waterline.spec import FeedSpec

REASON = "_wl_reason"


def check_columns(spec: FeedSpec, df: DataFrame) -> None:
    present = {c.lower() for c in df.columns}
    for column in (*spec.key, spec.event_time):
        if column.lower() not in present:
            what = "event_time" if column == spec.event_time else "key"
            raise WaterlineError(
                f"feed {spec.feed}: {what} column `{column}` is not in the output "
                f"(columns: {', '.join(df.columns)})"
            )


def parse_event_time(spec: FeedSpec, df: DataFrame) -> DataFrame:
    """Event times given as text are parsed; unparseable ones become NULL and are quarantined.

    Text without an explicit offset is read in the spec's `timezone`; the Spark
    session itself stays in UTC so that interval arithmetic in policies is exact.
    The original text is kept in `_wl_event_text` so the quarantine can tell
    "missing" from "unparseable".
    """
    column = F.col(spec.event_time)
    kind = df.schema[spec.event_time].dataType
    if isinstance(kind, TimestampType):
        return df.withColumn("_wl_event_text", F.lit(None).cast("string"))
    if isinstance(kind, TimestampNTZType):
        return df.withColumns({"_wl_event_text": F.lit(None).cast("string"),
                               spec.event_time: F.to_utc_timestamp(column.cast("timestamp"), spec.timezone)})
    if not isinstance(kind, StringType):
        raise WaterlineError(
            f"feed {spec.feed}: event_time column `{spec.event_time}` is {kind.simpleString()}, "
            f"not a timestamp (convert it in the transform, e.g. timestamp_millis(...))"
        )
    text = F.trim(column)
    parsed = F.expr(f"try_to_timestamp(trim(`{spec.event_time}`))")
    if spec.timezone != "UTC":
        has_offset = text.rlike(r"(?i)(z|[+-][0-9]{2}(:?[0-9]{2})?)$")
        parsed = F.when(has_offset, parsed).otherwise(F.to_utc_timestamp(parsed, spec.timezone))
    # one projection (both read the frame's own column): each DataFrame step is an analysis
    return df.withColumns({"_wl_event_text": column, spec.event_time: parsed})


def parsed_schema(spec: FeedSpec, raw: StructType) -> StructType:
    """The schema `parse_event_time` gives a frame whose schema is ``raw``, told without asking
    Spark (a round trip under Spark Connect): a text or timezone-less event time becomes a
    TIMESTAMP, and `_wl_event_text` follows."""
    fields = [
        StructField(f.name, TimestampType(), True)
        if f.name == spec.event_time and isinstance(f.dataType, (StringType, TimestampNTZType)) else f
        for f in raw.fields
    ]
    return StructType([*fields, StructField("_wl_event_text", StringType(), True)])


def reason_column(spec: FeedSpec, late_before_us: int | None) -> Column:
    """Why a row is invalid (NULL when valid), in the order a user would fix them.

    One SQL expression: a Column built call by call costs a py4j round trip per call."""
    event = quoted(spec.event_time)
    cases = [f"WHEN {quoted(key)} IS NULL THEN {sql_string(f'null key column {key}')}" for key in spec.key]
    cases += [
        f"WHEN {event} IS NULL AND _wl_event_text IS NULL THEN 'null event_time'",
        f"WHEN {event} IS NULL THEN concat('unparseable event_time: ', _wl_event_text)",
    ]
    if late_before_us is not None and spec.late in ("drop", "quarantine"):
        cases.append(f"WHEN unix_micros({event}) < {late_before_us} THEN 'late: event_time below the event waterline'")
    return F.expr(f"CASE {' '.join(cases)} ELSE CAST(NULL AS STRING) END")


def check_duplicates(spec: FeedSpec, partition: str, valid: DataFrame) -> None:
    """Duplicate identities in one partition's output fail the ingest before anything is written."""
    dups = (
        valid.groupBy(*spec.key).agg(F.count(F.lit(1)).alias("_n")).filter("_n > 1")
        .limit(MAX_KEYS_IN_ERROR + 1).collect()
    )
    if dups:
        found = [(tuple(row[k] for k in spec.key), row["_n"]) for row in dups]
        raise duplicate_keys_error(spec.feed, partition, spec.key, found)


def check_schema(spec: FeedSpec, held: StructType, output: StructType) -> None:
    """The output's columns must match the held table's: drift is an error naming the columns."""
    before = {f.name: f.dataType.simpleString() for f in held.fields if not C.is_system(f.name)}
    after = {f.name: f.dataType.simpleString() for f in output.fields if not C.is_system(f.name)}
    if before == after:
        return
    added = sorted(set(after) - set(before))
    dropped = sorted(set(before) - set(after))
    changed = sorted(f"{c}: {before[c]} -> {after[c]}" for c in set(before) & set(after) if before[c] != after[c])
    parts = [f"added {added}" if added else "", f"removed {dropped}" if dropped else "",
             f"changed {changed}" if changed else ""]
    raise WaterlineError(
        f"feed {spec.feed}: output schema differs from the held table's: "
        + "; ".join(p for p in parts if p)
        + " (a new column takes effect through `waterline apply` with a transform that names its output "
        "columns; a removed or retyped column is refused: keep it, or add a new column)"
    )
