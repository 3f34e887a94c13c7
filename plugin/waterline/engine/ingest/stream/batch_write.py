"""A micro-batch's versions planned and written: the Spark side of `stream.batch`.

A batch too large to collect is planned in Spark (`plan_versions`: each key's last valid
record, diffed against the key's current version wherever it is) and written in one pass
that also counts its rows (`write_large`); a batch whose size the checkpoint did not tell
is counted first (`checked`). Either kind of versions, Spark's or the driver's Arrow rows
(`stream.small_batch`), is written as uncommitted files by `write`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from waterline.engine.core import columns as C
from waterline.engine.core.races import new_token
from waterline.engine.delta.table_log import TableLog
from waterline.engine.ingest import held_append
from waterline.engine.spark import observed
from waterline.engine.ingest import versions as V
from waterline.engine.spark.local_frames import arrow_schema, spark_schema
from waterline.engine.ingest.stream.batch_context import BatchContext
from waterline.engine.tables.schedule import removal_schedule
from waterline.engine.ingest.stream.small_batch import bad_partition
from waterline.engine.tables.spark_tables import read_delta, table_schema
from waterline.engine.ingest.validate import REASON
from waterline.errors import WaterlineError
from waterline.spec import FeedSpec
from waterline.spec.stream_sql import RECORD_OFFSET, RECORD_PARTITION, RECORD_TOPIC, REMOVE

_CURRENT = "_wl_current"


@dataclass(frozen=True)
class Batch:
    """A micro-batch's output, prepared (`stream.batch._prepare`)."""

    rows: DataFrame  # every output row: payload, record columns, partition, quarantine reason
    schema: StructType  # the payload's, as the output gives it (event time parsed)
    payload: list[str]
    hash_as_text: bool
    hash_added: tuple[str, ...] = ()  # payload columns apply added to held (`profile.row_hash`)


def _row_aggregates(spec: FeedSpec) -> list[Column]:
    """A batch's counts over its rows: records, quarantined rows, the latest event time of a
    valid row, the partition values of the valid rows (few)."""
    valid = F.col(REASON).isNull()
    return [F.count(F.lit(1)).alias("rows"),
            F.count(F.when(~valid, 1)).alias("quarantined"),
            F.max(F.when(valid & ~F.col(REMOVE), F.unix_micros(F.col(spec.event_time)))).alias("max_event"),
            F.collect_set(F.when(valid, F.col(C.PARTITION))).alias("partitions")]


def _stats(row, source: str) -> dict:
    return {"rows": row["rows"], "quarantined": row["quarantined"],
            "max_event": {} if row["max_event"] is None else {source: row["max_event"]}}


def _bad_partitions(spec: FeedSpec, values) -> dict[str, str]:
    return {v: why for v in values if (why := bad_partition(spec, v)) is not None}


def checked(spec: FeedSpec, rows: DataFrame, source: str) -> tuple[DataFrame, dict]:
    """The rows, with those whose ``partition_by`` value is not a partition of the spec's
    scheme quarantined with the reason, and their counts (`_row_aggregates`). One Spark job
    (its partition values are few); a second only in the rare batch with a bad partition value."""
    row = rows.agg(*_row_aggregates(spec)).collect()[0]
    bad = _bad_partitions(spec, row["partitions"])
    if bad:
        return checked(spec, _quarantined(rows, bad), source)
    return rows, _stats(row, source)


def _quarantined(rows: DataFrame, bad: dict[str, str]) -> DataFrame:
    """``rows`` with those of a partition value in ``bad`` given its reason (value -> reason)."""
    reason = F.coalesce(F.col(REASON), F.create_map(*[F.lit(x) for kv in bad.items() for x in kv])[F.col(C.PARTITION)])
    return rows.withColumn(REASON, reason)


@dataclass(frozen=True)
class Large:
    """A large batch written (`write_large`): its files under ``token``, uncommitted."""

    rows: DataFrame  # the batch's rows, those of a bad partition value given their reason
    stats: dict  # over those rows: records, quarantined rows, latest event time (`_stats`)
    counts: dict  # of the versions written (`versions.version_counts`)
    token: str


def write_large(ctx: BatchContext, batch: Batch, tags: dict[str, Column], later: dict[str, Column], *,
                token: str) -> Large:
    """A batch too large to collect, in one pass: its versions are planned (`plan_versions`) and
    written as files under ``token`` (uncommitted) by the job that also counts its rows
    (observed metrics, `_row_aggregates`). Keeping the rows for a counting job first cost
    more than that job: 4.5 s of 11 for 1M records (docs/decisions.md).

    Whether every ``partition_by`` value is a partition of the spec's scheme is known only
    once that pass has run: if one is not, its files are discarded and the batch is written
    again under a new token, those rows quarantined. That second pass counts its own rows:
    the quarantined ones are no longer valid, so no bad value is left to find."""
    spec, source, held_log = ctx.spec, ctx.source, ctx.held_log

    def one_pass(rows: DataFrame, token: str) -> tuple[Large, dict[str, str]]:
        observation = Observation(f"waterline_rows_{token}")
        watched = rows.observe(observation, *_row_aggregates(spec))
        counts = write(spec, held_log, plan_versions(ctx, batch, watched, tags, later), token)
        try:  # counted when Spark reported no metrics (Connect may not): a job that can fail
            row = observed.counted(observation, rows, _row_aggregates(spec))
        except BaseException:
            held_append.discard(spec.held_path, token)
            raise
        return Large(rows, _stats(row, source), counts, token), _bad_partitions(spec, row["partitions"])

    first, bad = one_pass(batch.rows, token)
    if not bad:
        return first
    held_append.discard(spec.held_path, token)
    second, left = one_pass(_quarantined(batch.rows, bad), new_token())
    if left:  # cannot happen: a quarantined row's value is not among the valid rows' partitions
        held_append.discard(spec.held_path, second.token)
        raise WaterlineError(f"feed {spec.feed}, source {source}: partition values {sorted(left)} were still "
                             "found after their rows were quarantined; nothing written")
    return second


def plan_versions(ctx: BatchContext, batch: Batch, rows: DataFrame, tags: dict[str, Column],
                  later: dict[str, Column]) -> DataFrame:
    """The held versions a batch too large to collect appends, planned in Spark: each key's
    last valid record, diffed against the key's current version wherever it is
    (`waterline.semantics.stream_batch`; `stream.small_batch` is the driver's way)."""
    spark, spec, held_log, seq = ctx.spark, ctx.spec, ctx.held_log, ctx.seq
    keys = list(spec.key)
    order = [F.col(c).desc() for c in (RECORD_TOPIC, RECORD_PARTITION, RECORD_OFFSET)]
    last = (rows.filter(F.col(REASON).isNull())
            .withColumn("_wl_rank", F.row_number().over(Window.partitionBy(*keys).orderBy(*order)))
            .filter(F.col("_wl_rank") == 1))
    tagged = last.select(*batch.payload, REMOVE, C.PARTITION, *[column.alias(name) for name, column in tags.items()])
    if later:
        tagged = tagged.withColumns(later)
    columns = V.version_columns(batch.payload, spec.tiers)
    stamped = {C.INGESTED_AT: F.current_timestamp(), C.SEQ: F.lit(seq).cast("bigint")}
    if held_log.row_count() == 0:
        # A feed's first batch (a drain): no key has a version, so every upsert is an insert
        # and a removal appends nothing. No lookup: a join with an empty held frame is still
        # planned as a sort-merge join, and the removals' branch computed the collapse twice.
        inserts = tagged.filter(~F.col(REMOVE)).withColumns({V.KIND: F.lit("insert"), C.REMOVED: F.lit(False)})
        return inserts.withColumns(stamped).select(*columns)
    # A move is two versions of one seq (the removal in the old partition, the row in the new
    # one): of a key's newest seq, the row that is not a removal is the current version.
    newest = F.struct(F.col(C.SEQ), ~F.col(C.REMOVED))
    found = F.max_by(F.struct(F.col(C.HASH).alias("h"), F.col(C.REMOVED).alias("r"), F.col(C.PARTITION).alias("p")),
                     newest).alias(_CURRENT)
    held = read_delta(spark, spec.held_path).join(last.select(*keys), on=keys, how="left_semi")
    current = held.groupBy(*keys).agg(found)
    joined = tagged.join(current, on=keys, how="left")
    cur = F.col(_CURRENT)
    live = cur.isNotNull() & ~cur["r"]
    moved = live & (cur["p"] != F.col(C.PARTITION))
    same = live & (cur["p"] == F.col(C.PARTITION)) & (cur["h"] == F.col(C.HASH))
    removal = F.col(REMOVE)
    upserts = (joined.filter(~removal & ~same)
               .withColumn(V.KIND, F.when(live & ~moved, F.lit("update")).otherwise(F.lit("insert")))
               .withColumn(C.REMOVED, F.lit(False)))
    gone = joined.filter((removal & live) | (~removal & moved))
    payload_types = {f.name: f.dataType for f in batch.schema.fields}
    gone = gone.select(
        *[F.col(c) if c in keys else F.lit(None).cast(payload_types[c]).alias(c) for c in batch.payload],
        F.lit(None).cast(tagged.schema[C.HASH].dataType).alias(C.HASH),
        cur["p"].alias(C.PARTITION), F.lit(True).alias(C.REMOVED), F.lit("remove").alias(V.KIND),
    )
    removals = removal_schedule(gone, spec.tiers)
    return (upserts.drop(REMOVE, _CURRENT).withColumns(stamped).select(*columns)
            .unionByName(removals.withColumns(stamped).select(*columns)))


def write(spec: FeedSpec, held_log: TableLog, versions: DataFrame | pa.Table, token: str) -> dict:
    """Write the versions as files under ``token`` (uncommitted) and count them: computed on
    the driver (Arrow rows), written from there; else Spark writes them and counts them in the
    same pass (observed metrics). Nothing written (every record equal to its key's current
    version) leaves no file."""
    stored = table_schema(held_log)
    local = isinstance(versions, pa.Table)
    why_not = held_append.direct_unsupported(held_log, spark_schema(versions.drop_columns([V.KIND])) if local
                                             else versions.drop(V.KIND).schema)
    if why_not is not None:
        raise WaterlineError(f"feed {spec.feed}: a stream appends with waterline's commit writer, which cannot "
                             f"append to {spec.held_path}: {why_not}")
    columns = stored.fieldNames()
    try:
        if local:
            held_append.write_arrow(versions.select(columns).cast(arrow_schema(stored)), columns, spec.held_path, token)
            return V.arrow_counts(spec, versions)
        watched, counted = V.observe_counts(spec, versions)
        held_append.write_partitioned(watched.drop(V.KIND), columns, spec.held_path, token)
        return V.observed_counts(spec, counted, versions)
    except BaseException:
        held_append.discard(spec.held_path, token)
        raise


__all__ = ["Batch", "Large", "checked", "plan_versions", "write", "write_large"]
