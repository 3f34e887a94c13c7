"""One micro-batch of a stream source into the held table, exactly once.

The rules (DESIGN.md "Streams", `waterline.semantics.stream_batch`): each record is an
upsert or a removal of its key, never the replacement of a partition; the records of one
key in a batch collapse to the last by (topic, Kafka partition, offset); a record equal to
the key's current version appends nothing, nor does the removal of an absent key; a row
whose partition changed is a removal in its old partition and a version in the new one.

Exactly once: the batch's versions, the held state and the Delta transaction
(``waterline.stream.<source>``, the batch id) are one commit, written under the feed lease
by waterline's commit writer (`held_append`). Spark's checkpoint records a batch as done
only after this returns, so a crash in between replays the batch with the same id; the
held table already has that transaction, and the replay appends nothing. The quarantine
append carries its own transaction, so a replay does not repeat its rows either.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from waterline.clock import Clock, SystemClock
from waterline.engine.core import columns as C
from waterline.engine.core import faults
from waterline.engine.core.event_time import advance_sources, event_waterline
from waterline.engine.core.races import new_token
from waterline.engine.core.results import StreamBatchResult
from waterline.engine.core.sqltext import quoted, sql_string
from waterline.engine.core.state import HeldState
from waterline.engine.delta.commit import property_commit, write_commit
from waterline.engine.delta.table_log import TableLog
from waterline.engine.tables import feed_tables
from waterline.engine.tables.lease import Lease
from waterline.engine.ingest import held_append, row_errors
from waterline.engine.ingest.stream import batch_write as W
from waterline.engine.ingest.stream.batch_context import BatchContext
from waterline.engine.ingest import versions as V
from waterline.engine.ingest.ingest import under_lease
from waterline.engine.spark.local_frames import batch_fits, spark_frame
from waterline.engine.ingest.profile import row_hash
from waterline.engine.tables.schedule import check_tiers_scheduled, compile_tiers, schedule_columns
from waterline.engine.ingest.stream.small_batch import collect_rows, small_batch
from waterline.engine.ingest.stream.source import UNPARSED_REASON, UNPARSED_ROW, BatchFrames, batch_output
from waterline.engine.tables.spark_tables import (
    create_own_table, ensure_tier_tables, held_stats_columns, payload_schema, table_schema,
)
from waterline.engine.ingest.validate import REASON, check_columns, check_schema, parse_event_time, parsed_schema, reason_column
from waterline.errors import SpecError, WaterlineError
from waterline.spec import FeedSpec
from waterline.spec.stream_sql import REMOVE

log = logging.getLogger(__name__)

#: The commit's ``operationParameters`` key holding the batch's `StreamBatchResult` (JSON).
BATCH_PARAMETER = "waterlineStreamBatch"


def stream_app(source: str) -> str:
    """The Delta transaction id of a stream source's micro-batches in the held table."""
    return f"waterline.stream.{source}"


def applied_batch(spec: FeedSpec, source: str) -> int | None:
    """The last batch id of ``source`` the held table has (None: none yet)."""
    return TableLog.open(spec.held_path).transaction_version(stream_app(source))


def ingest_batch(spark: SparkSession, spec: FeedSpec, source: str, records: DataFrame, batch_id: int, *,
                 clock: Clock | None = None, bound: int | None = None) -> StreamBatchResult:
    """Append micro-batch ``batch_id`` of ``source`` (Spark's Kafka columns) to the held table,
    unless the held table has it already. ``bound``: at most how many records the batch holds,
    when the caller knows (`stream.offsets.batch_bound`); a batch that fits is read by one job."""
    clock = clock or SystemClock()

    def locked(lease: Lease) -> StreamBatchResult:
        held_log = TableLog.open(spec.held_path)
        done = held_log.transaction_version(stream_app(source))
        if done is not None and done >= batch_id:
            log.info("feed %s: stream %s batch %s is in held already (a replay): skipped", spec.feed, source, batch_id)
            return StreamBatchResult(feed=spec.feed, source=source, batch_id=batch_id, skipped=True, seq=None)
        return _batch_locked(BatchContext(spark=spark, spec=spec, source=source, batch_id=batch_id, held_log=held_log,
                                          state=feed_tables.held_state(held_log, spec.feed), now_us=clock.now_us(),
                                          lease=lease, bound=bound), records)

    return under_lease(spec, locked, what=f"stream {source} batch {batch_id}",
                       where=f"source {source}: batch {batch_id}")


def warm_up(spark: SparkSession, spec: FeedSpec, source: str, sample: DataFrame, records: int) -> int:
    """Run a small batch's one Spark job (decode, transform, checks, row hash and schedule,
    to Arrow: `collect_rows`) over ``records`` copies of ``sample``'s records (Spark's Kafka
    columns), and discard what it collects: nothing is written, no lease is taken, no
    offset is read into the checkpoint. Returns how many records ran through it (0: the
    sample was empty).

    Why: the JVM compiles that path's hot code (Kafka records to rows, the JSON parse, the
    transform, Arrow) only after it has run it for a while. A long-running stream's first
    batches ran 3-5 times slower than later ones of the same size, and the records arriving
    meanwhile made the next batches longer: a transient of ~30 s, a slow machine's p99
    (docs/streams.md "Speed of the long-running mode")."""
    kept = sample.persist(StorageLevel.MEMORY_AND_DISK_DESER)
    try:
        count = kept.count()
        if not count:
            return 0
        copies = -(-records // count)
        batch_records = kept.crossJoin(spark.range(copies).withColumnRenamed("id", "_wl_copy")).drop("_wl_copy")
        held_log = TableLog.open(spec.held_path)
        frames = batch_output(spec, source, batch_records)
        try:
            batch = _prepare(spark, spec, frames.output, held_log, feed_tables.held_state(held_log, spec.feed))
            tags, later = _tags(batch, compile_tiers(spark, spec, batch.rows.select(batch.payload), batch.schema))
            collect_rows(spec, batch.rows, tags, later, frames.unparsed)
            return copies * count
        finally:
            frames.close()
    finally:
        kept.unpersist()


def _batch_locked(ctx: BatchContext, records: DataFrame) -> StreamBatchResult:
    # a batch the checkpoint says is too large to collect is read by one pass: nothing kept
    frames = batch_output(ctx.spec, ctx.source, records, keep=ctx.bound is None or batch_fits(ctx.bound))
    try:
        return _write_batch(ctx, frames)
    finally:
        frames.close()


def _write_batch(ctx: BatchContext, frames: BatchFrames) -> StreamBatchResult:
    spark, spec, source, batch_id, state, now = ctx.spark, ctx.spec, ctx.source, ctx.batch_id, ctx.state, ctx.now_us
    app = stream_app(source)
    batch = _prepare(spark, spec, frames.output, ctx.held_log, state)
    plans = compile_tiers(spark, spec, batch.rows.select(batch.payload), batch.schema)
    if not ctx.held_log.exists:
        ctx = replace(ctx, held_log=_create_held(spark, spec, batch, plans))
    held_log = ctx.held_log
    kept: list[DataFrame] = []
    try:
        try:
            written = _written(ctx, batch, plans, frames, kept)
        except Exception as exc:  # a policy operator failing on one row's value: name the row
            where = row_errors.locate(exc, spec, batch.rows, plans)
            if where is None:
                raise
            raise WaterlineError(f"feed {spec.feed}: stream {source} batch {batch_id}: {where}") from exc
        stats, counts, token = written.stats, written.counts, written.token
        new = _next_state(ctx, stats["max_event"], counts, token=token)
        # a version due before now is due now (late data, removals at minus infinity)
        due_by_tier = {t: max(tau, now) for t, tau in counts["min_tau"].items() if tau is not None}
        done = StreamBatchResult(
            feed=spec.feed, source=source, batch_id=batch_id, skipped=False,
            seq=new.seq if counts["total"] else None, records=stats["rows"], versions_written=counts["total"],
            inserted=counts["insert"], updated=counts["update"], removed=counts["remove"],
            quarantined=written.quarantined, event_waterline_us=new.event_w,
            next_due_us=min(due_by_tier.values(), default=None), due_by_tier=due_by_tier)
        if counts["total"]:
            _commit(spec, held_log, new, (app, batch_id), moved=_moved(new, state), lease=ctx.lease,
                    parameters={BATCH_PARAMETER: json.dumps(done.to_dict())})
        else:
            held_append.discard(spec.held_path, token)
            if _moved(new, state):
                ctx.lease.check()
                write_commit(held_log.snapshot(), property_commit(new))
    finally:
        for frame in kept:
            frame.unpersist()
    return done


@dataclass(frozen=True)
class _Written:
    """A batch's versions written as files under ``token`` (none committed yet), its
    quarantine appended, and its counts."""

    token: str
    stats: dict  # over the batch's rows: records, quarantined rows, latest event time
    counts: dict  # of the versions written (`versions.version_counts`)
    quarantined: int  # rows and unparseable records quarantined


def _written(ctx: BatchContext, batch: W.Batch, plans, frames: BatchFrames, kept: list[DataFrame]) -> _Written:
    """Write the batch's versions and append its quarantine, the way its size asks (frames
    this persists are added to ``kept``, for the caller to free):

    * small (``bound`` fits): collected by one Spark job, then checked, collapsed and diffed
      against held on the driver (`stream.small_batch`; its keys are looked up in the columns this
      process keeps of held's files, `held_keys`);
    * large (``bound`` does not fit): one Spark pass checks, counts and writes (`stream.batch_write.write_large`);
    * unknown (no ``bound``: the checkpoint did not tell): counted by `stream.batch_write.checked` first, then
      either of the two.

    On failure the versions' files are deleted: no commit will name them."""
    spark, spec, source, held_log, bound = ctx.spark, ctx.spec, ctx.source, ctx.held_log, ctx.bound
    tags, later = _tags(batch, plans)
    token = new_token()
    unparsed = frames.unparsed
    try:
        small = None
        if batch_fits(bound):
            small = small_batch(ctx, collect_rows(spec, batch.rows, tags, later, unparsed), batch.rows.columns,
                                batch.payload)
        elif bound is not None:
            large = W.write_large(ctx, batch, tags, later, token=token)
            rows, stats, counts, token = large.rows, large.stats, large.counts, large.token
        else:
            kept.append(batch.rows.persist(StorageLevel.MEMORY_AND_DISK_DESER))
            rows, stats = W.checked(spec, kept[-1], source)
            if batch_fits(stats["rows"]):
                small = small_batch(ctx, collect_rows(spec, rows, tags, later, unparsed), rows.columns, batch.payload)
            else:
                planned = W.plan_versions(ctx, batch, rows, tags, later)
                counts = W.write(spec, held_log, planned, token)
        if small is not None:
            stats = small.stats
            counts = W.write(spec, held_log, small.versions, token)
            invalid = spark_frame(spark, small.invalid, batch.rows.schema) if small.invalid.num_rows else None
            unparsed = spark.createDataFrame(small.unparsed) if small.unparsed.num_rows else None
            bad = small.unparsed.num_rows
        else:
            invalid = rows if stats["quarantined"] else None
            bad = frames.decoded.unparsed_count()
        _quarantine(ctx, invalid, unparsed if bad else None)
    except BaseException:
        held_append.discard(spec.held_path, token)
        raise
    return _Written(token=token, stats=stats, counts=counts, quarantined=stats["quarantined"] + bad)


def batches_in_log(held_log: TableLog, source: str, *, after_version: int | None) -> list[StreamBatchResult]:
    """The micro-batches of ``source`` held committed after table version ``after_version``
    (None: all retained), oldest first, as each commit's ``operationParameters`` recorded
    them. How a run over Spark Connect, whose batches run in the server's Python worker,
    learns what they did. Batches that appended nothing (replays, records equal to the
    current versions) made no commit and are not among them."""
    newest = held_log.version
    if newest is None:
        return []
    depth = newest - (-1 if after_version is None else after_version)
    found = []
    for commit in held_log.history(depth):
        text = (commit.get("operationParameters") or {}).get(BATCH_PARAMETER)
        if text is None or (after_version is not None and int(commit["version"]) <= after_version):
            continue
        batch = StreamBatchResult(**json.loads(text))
        if batch.source == source:
            found.append(batch)
    return sorted(found, key=lambda b: b.batch_id)


def _prepare(spark: SparkSession, spec: FeedSpec, output: DataFrame, held_log: TableLog,
             state: HeldState) -> W.Batch:
    """The batch's output checked against the spec and the held table, with each row's
    partition (``partition_by``, none for a removal) and quarantine reason."""
    check_columns(spec, output)
    payload = [c for c in output.columns if not C.is_system(c)]
    parsed = parse_event_time(spec, output)
    full = parsed_schema(spec, output.schema)
    schema = StructType([full[c] for c in payload])
    held_schema = table_schema(held_log) if held_log.exists else None
    if held_schema is not None:
        check_schema(spec, held_schema, schema)
        check_tiers_scheduled(spec, held_schema.fieldNames())
    hash_as_text = held_schema is not None and held_schema[C.HASH].dataType.typeName() == "string"
    removal = F.col(REMOVE)
    try:
        partition = F.expr(spec.partition_by).cast("string")
    except Exception as exc:  # a parse error is Spark's; the spec key is ours
        raise SpecError(f"{spec.origin}: partition_by: {str(exc).splitlines()[0]}") from exc
    late_before = state.event_w if spec.waterline.mode == "event" else None
    key_reason = F.expr("CASE " + " ".join(f"WHEN {quoted(k)} IS NULL THEN {sql_string(f'null key column {k}')}"
                                           for k in spec.key) + " END")
    # one projection: the reason reads the partition expression itself, not the column
    row_reason = F.coalesce(reason_column(spec, late_before),
                            F.when(partition.isNull(), F.lit("partition_by gave NULL")))
    rows = parsed.withColumns({C.PARTITION: F.when(~removal, partition),
                               REASON: F.when(removal, key_reason).otherwise(row_reason)})
    added = tuple(C.added_payload(held_schema.fieldNames())) if held_schema is not None else ()
    return W.Batch(rows=rows, schema=schema, payload=payload, hash_as_text=hash_as_text, hash_added=added)


def _tags(batch: W.Batch, plans) -> tuple[dict[str, Column], dict[str, Column]]:
    """A record's row hash and schedule columns; then those that read the schedule's first
    columns (`schedule.schedule_columns`)."""
    first, later = schedule_columns(plans)
    hashed = row_hash(batch.schema, batch.payload, as_text=batch.hash_as_text, added=batch.hash_added)
    return {C.HASH: hashed, **first}, later


def _create_held(spark: SparkSession, spec: FeedSpec, batch: W.Batch, plans) -> TableLog:
    """The held table, empty, with the batch's columns (a stream's first batch; later ones
    append with waterline's commit writer), and the tier tables."""
    stored = V.stored_schema(batch.schema, batch.payload, spec.tiers, hash_as_text=False)
    faults.boundary(faults.CREATE_HELD_BEFORE)
    create_own_table(spark, spec.held_path, stored, HeldState(op="create", token=new_token()),
                     dataSkippingStatsColumns=",".join(held_stats_columns(spec, stored)))
    faults.boundary(faults.CREATE_HELD_AFTER)
    ensure_tier_tables(spark, spec, payload_schema(stored))
    return TableLog.open(spec.held_path)


def _commit(spec: FeedSpec, held_log: TableLog, state: HeldState, txn: tuple[str, int], *, moved: bool,
            lease: Lease, parameters: dict[str, str]) -> None:
    """One commit of ours for the files `_write` left under ``state.token``, with the state and
    both transactions (the held sequence and the stream's batch)."""
    faults.boundary(faults.INGEST_BEFORE_COMMIT)
    lease.check()  # the last moment a lost lease can stop the commit
    held_append.commit(held_log, state, state.token, record_property=moved, stream_txn=txn, parameters=parameters)
    faults.boundary(faults.INGEST_AFTER_COMMIT)


def _quarantine(ctx: BatchContext, rows: DataFrame | None, unparsed: DataFrame | None) -> None:
    """Append the batch's invalid rows (those of ``rows`` with a reason) and its unparseable
    records (``unparsed``: quarantine rows) to the quarantine table, once: the append carries
    the transaction (stream app, batch id), so a replay adds nothing. None: there are none."""
    spec, source, batch_id, now_us = ctx.spec, ctx.source, ctx.batch_id, ctx.now_us
    at = F.expr(f"timestamp_micros({now_us})").alias("_wl_quarantined_at")
    parts = []
    if rows is not None:
        where = F.coalesce(F.col(C.PARTITION), F.lit(f"stream-{source}")).alias(C.PARTITION)
        payload = [c for c in rows.columns if not C.is_system(c) and c != REASON]
        parts.append(rows.filter(F.col(REASON).isNotNull()).select(
            where, F.col(REASON).alias("_wl_reason"), F.to_json(F.struct(*[F.col(c) for c in payload])).alias("_wl_row"),
            at))
    if unparsed is not None:
        parts.append(unparsed.select(F.lit(f"stream-{source}").alias(C.PARTITION),
                                     F.col(UNPARSED_REASON).alias("_wl_reason"), F.col(UNPARSED_ROW).alias("_wl_row"), at))
    if not parts:
        return
    out = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
    (out.write.format("delta").mode("append").partitionBy(C.PARTITION)
     .option("txnAppId", f"{stream_app(source)}.quarantine").option("txnVersion", str(batch_id))
     .save(spec.quarantine_path))


def _next_state(ctx: BatchContext, max_event: dict, counts: dict, *, token: str) -> HeldState:
    spec, state, source, now_us = ctx.spec, ctx.state, ctx.source, ctx.now_us
    sources, event_w = state.sources, state.event_w
    if spec.waterline.mode == "event":
        sources = advance_sources(sources, max_event, now_us)
        event_w = event_waterline(spec, sources, state.event_w, now_us)
    new = state.evolve(op="ingest", partition=f"stream-{source}", versions=0, min_tau=V.nothing(spec)["min_tau"],
                       fingerprint=None, sources=sources, event_w=event_w, n=state.n + 1, token=token)
    if counts["total"]:
        new = new.evolve(seq=state.seq + 1, versions=counts["total"], min_tau=counts["min_tau"])
    return new


def _moved(new: HeldState, old: HeldState) -> bool:
    return (new.event_w, new.sources) != (old.event_w, old.sources)


__all__ = ["BATCH_PARAMETER", "applied_batch", "batches_in_log", "ingest_batch", "stream_app", "warm_up"]
