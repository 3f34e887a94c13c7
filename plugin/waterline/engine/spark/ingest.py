"""Ingest one feed partition into the held table as versions.

New and changed rows get a version, rows the partition no longer produces get a
removal version, unchanged rows get none; an identical re-run appends nothing.
All of it lands in one Delta commit that also advances the feed's ingest
sequence, under the feed lease, so a crash at any point leaves either the old
or the new state, and a re-run converges.

Spark work per ingest: one aggregate pass (counts, event times, takeovers and
the output's fingerprint, see `profile`); if the fingerprint equals the one
the partition's last ingest committed, that is all. Otherwise a duplicate-key
check and the write; a partition held already has is diffed against its
current versions first (a cached join), a new one is written as is. With no
earlier fingerprint to compare with, the profile is observed during the
duplicate-key check: one job, not two.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from waterline.clock import Clock, SystemClock
from waterline.engine.core import columns as C
from waterline.engine.core import faults
from waterline.engine.core.event_time import advance_sources, event_waterline
from waterline.engine.core.races import new_token, retry_lost_races
from waterline.engine.core.results import IngestResult
from waterline.engine.core.sqltext import sql_string
from waterline.engine.core.state import HeldState
from waterline.engine.log.lease import Lease, feed_lease
from waterline.engine.log.storage import is_delta_table
from waterline.engine.log.table_log import APP_SEQ, TableLog
from waterline.engine.spark.commits import commit_state, record_state
from waterline.engine.spark.conflicts import is_commit_conflict
from waterline.engine.spark.profile import (
    Profile,
    profile,
    profile_checking_duplicates,
    row_hash,
)
from waterline.engine.spark.schedule import (
    check_tiers_scheduled,
    compile_tiers,
    removal_schedule,
    with_schedule,
)
from waterline.engine.spark.source import read_output_and_unparsed
from waterline.engine.spark.spark_errors import hint, spark_message
from waterline.engine.spark.tables import (
    creating_held_table,
    ensure_tier_tables,
    payload_schema,
    read_delta,
    table_schema,
)
from waterline.engine.spark.validate import (
    REASON,
    check_columns,
    check_duplicates,
    check_schema,
    parse_event_time,
    reason_column,
)
from waterline.errors import WaterlineError
from waterline.semantics import NEG_INF
from waterline.spec import FeedSpec

_KIND = "_wl_kind"


def ingest(spark: SparkSession, spec: FeedSpec, partition: str, *, clock: Clock | None = None) -> IngestResult:
    """Process ``partition`` and append what changed to the held table."""
    clock = clock or SystemClock()
    partition = spec.partitions.validate(partition)
    try:
        with feed_lease(spec.feed_dir, feed=spec.feed) as lease:
            # A lost race recomputes the sequence from the new state.
            return retry_lost_races(
                lambda: _ingest_locked(spark, spec, partition, clock, lease),
                is_race=is_commit_conflict, before_retry=lease.check,
                what=f"feed {spec.feed}: ingest of {partition}",
            )
    except WaterlineError:
        raise
    except Exception as exc:
        # Spark failing on the feed's own code or data (the transform, the job, a source):
        # one line naming the feed, the partition and Spark's error, nothing committed.
        message = spark_message(exc)
        if message is None:
            raise
        raise WaterlineError(f"feed {spec.feed}: partition {partition}: {message}{hint(exc)}") from exc


def _ingest_locked(spark: SparkSession, spec: FeedSpec, partition: str, clock: Clock, lease: Lease) -> IngestResult:
    held_log = TableLog.open(spec.held_path)
    state = held_log.held_state(spec.feed)
    now = clock.now_us()
    raw, unparsed = read_output_and_unparsed(spark, spec, partition)
    check_columns(spec, raw)
    payload = [c for c in raw.columns if not C.is_system(c)]
    parsed = parse_event_time(spec, raw)
    held_schema = table_schema(held_log) if held_log.exists else None
    if held_schema is not None:
        check_schema(spec, held_schema, parsed.schema)
        check_tiers_scheduled(spec, held_schema.fieldNames())
    # Held tables from before the struct row hash keep their 32-hex-digit text hash.
    hash_as_text = held_schema is not None and held_schema[C.HASH].dataType.typeName() == "string"
    plans = compile_tiers(spark, spec, parsed.select(payload))

    late_before = state.event_w if spec.waterline.mode == "event" else None
    rows = parsed.withColumn(REASON, reason_column(spec, late_before))
    valid = rows.filter(F.col(REASON).isNull())
    previous = held_log.last_ingest_state(partition) if held_log.exists else None
    known = previous.fingerprint if previous else None  # what this partition's last ingest committed
    if known:
        prof = profile(spec, rows, payload, plans)  # alone first: it may spare everything else
    else:  # no fingerprint to compare with: one job profiles and checks keys
        prof = profile_checking_duplicates(spec, partition, rows, payload, plans)
    prof = _with_unparsed(prof, unparsed)
    sources, event_w = state.sources, state.event_w
    if spec.waterline.mode == "event":
        sources = advance_sources(sources, prof.max_event_by_source, now)
        event_w = event_waterline(spec, sources, state.event_w, now)
    new_state = state.evolve(
        op="ingest", partition=partition, versions=0, min_tau={t: None for t in spec.tiers},
        fingerprint=prof.fingerprint, sources=sources, event_w=event_w, n=state.n + 1, token=new_token(),
    )
    nothing = {"total": 0, "insert": 0, "update": 0, "remove": 0, "min_tau": new_state.min_tau}
    if known == prof.fingerprint:  # the same output as last time: no row can differ
        _commit(spark, spec, new_state, None, state, held_log=held_log, lease=lease)
        return _result(spec, partition, prof, nothing, None, event_w, now)
    if known:
        check_duplicates(spec, partition, valid)
    fresh = not held_log.exists or partition not in held_log.partitions()
    versions = _versions(spark, spec, partition, valid.select(*payload), plans, fresh=fresh,
                         hash_as_text=hash_as_text)
    if not fresh:  # the diff is counted before the write, which reuses it
        versions = versions.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        if fresh:  # every valid row is an insert: the profile has counted them
            counts = dict(nothing, total=prof.valid, insert=prof.valid, min_tau=prof.min_tau)
        else:
            counts = _version_counts(spec, versions)
        _write_quarantine(spark, spec, partition, rows, now, quarantine=prof.quarantined > 0, unparsed=unparsed)
        seq = state.seq + 1 if counts["total"] else None
        if seq is not None:
            new_state = new_state.evolve(seq=seq, versions=counts["total"], min_tau=counts["min_tau"])
        faults.boundary(faults.INGEST_BEFORE_COMMIT)
        _commit(spark, spec, new_state, versions if seq is not None else None, state, held_log=held_log,
                lease=lease)
        faults.boundary(faults.INGEST_AFTER_COMMIT)
        ensure_tier_tables(spark, spec, payload_schema(parsed.select(payload)))
    finally:
        if not fresh:
            versions.unpersist()
    return _result(spec, partition, prof, counts, seq, event_w, now)


def _commit(spark: SparkSession, spec: FeedSpec, new_state: HeldState, versions: DataFrame | None,
            old_state: HeldState, *, held_log: TableLog, lease: Lease) -> None:
    """Append the versions and the new state in one commit, or record a moved event time.

    The append carries the Delta transaction (``waterline.seq``, new seq): if a newer
    writer already committed that sequence, Delta skips it and
    `TableLog.committed_version` raises `SkippedCommit`, so the caller recomputes
    instead of losing the versions. A moved event time also goes into the table
    property, which survives log cleanup. ``held_log`` was read under the feed
    lease, so whether the table exists still holds: no second log read."""
    moved = (new_state.event_w, new_state.sources) != (old_state.event_w, old_state.sources)
    if versions is not None:
        creating = nullcontext() if held_log.exists else creating_held_table(spark, spec, versions.schema)
        lease.check()  # the last moment a lost lease can stop the commit
        with commit_state(spark, new_state, app=APP_SEQ, version=new_state.seq), creating:
            (
                versions.drop(_KIND).withColumn(C.SEQ, F.lit(new_state.seq).cast("bigint"))
                .write.format("delta").mode("append").partitionBy(C.PARTITION).save(spec.held_path)
            )
        TableLog.open(spec.held_path).committed_version(new_state.token, after=held_log.version)
        if moved:
            record_state(spark, spec.held_path, new_state)
    elif held_log.exists and moved:
        lease.check()
        record_state(spark, spec.held_path, new_state)  # event time moved, no version to write


def _result(spec, partition, prof: Profile, counts: dict, seq, event_w, now) -> IngestResult:
    due = [t for t in counts["min_tau"].values() if t is not None]
    return IngestResult(
        feed=spec.feed, partition=partition, seq=seq,
        rows_read=prof.rows, versions_written=counts["total"], inserted=counts["insert"],
        updated=counts["update"], removed=counts["remove"],
        unchanged=prof.valid - counts["insert"] - counts["update"],
        quarantined=prof.quarantined, late_dropped=prof.late_dropped,
        event_waterline_us=event_w, next_due_us=max(min(due), now) if due else None,
    )


def _versions(spark: SparkSession, spec: FeedSpec, partition: str, new: DataFrame, plans, *, fresh: bool,
              hash_as_text: bool = False) -> DataFrame:
    """Diff the partition's new output against its current versions in the held table
    (for a partition held has never seen, every row is an insert)."""
    payload = new.columns
    keys = list(spec.key)
    tagged = (
        new.withColumn(C.HASH, row_hash(new, payload, as_text=hash_as_text))
        .withColumn(C.PARTITION, F.lit(partition))
        .withColumn(C.REMOVED, F.lit(False))
        .withColumn(_KIND, F.lit("insert"))
    )
    tagged = with_schedule(tagged, plans)
    if fresh:
        return _finish(tagged)
    current = (
        read_delta(spark, spec.held_path)
        .filter(F.col(C.PARTITION) == partition)
        .groupBy(*keys)
        .agg(F.max_by(F.struct(F.col(C.HASH).alias("h"), F.col(C.REMOVED).alias("r")), F.col(C.SEQ)).alias("_cur"))
    )
    joined = tagged.join(current, on=keys, how="full_outer")
    cur_live = F.col("_cur").isNotNull() & ~F.col("_cur.r")
    kind = (
        F.when(F.col(C.HASH).isNotNull() & ~cur_live, F.lit("insert"))
        .when(F.col(C.HASH).isNotNull() & (F.col(C.HASH) != F.col("_cur.h")), F.lit("update"))
        .when(F.col(C.HASH).isNull() & cur_live, F.lit("remove"))
    )
    changed = joined.withColumn(_KIND, kind).filter(F.col(_KIND).isNotNull()).drop("_cur")
    removals = removal_schedule(
        changed.filter(F.col(_KIND) == "remove")
        .withColumn(C.PARTITION, F.lit(partition)).withColumn(C.REMOVED, F.lit(True)),
        plans,
    )
    upserts = changed.filter(F.col(_KIND) != "remove")
    return _finish(upserts.unionByName(removals))


def _finish(df: DataFrame) -> DataFrame:
    return df.withColumn(C.INGESTED_AT, F.current_timestamp())


def _version_counts(spec: FeedSpec, versions: DataFrame) -> dict:
    aggs = [F.count(F.lit(1)).alias("total")]
    aggs += [F.count(F.when(F.col(_KIND) == k, 1)).alias(k) for k in ("insert", "update", "remove")]
    aggs += [F.min(C.tau(t)).alias(f"tau_{i}") for i, t in enumerate(spec.tiers)]
    row = versions.agg(*aggs).collect()[0]
    min_tau = {t: row[f"tau_{i}"] for i, t in enumerate(spec.tiers)}
    return {
        "total": row["total"], "insert": row["insert"], "update": row["update"], "remove": row["remove"],
        # A NEG_INF takeover (removal, recall) is due at once: keep it, the sensor clamps to now.
        "min_tau": {t: (v if v is None or v > NEG_INF else NEG_INF) for t, v in min_tau.items()},
    }


def _with_unparsed(prof: Profile, unparsed) -> Profile:
    """The profile counting the source records that could not be parsed as quarantined, and
    fingerprinting them: a re-run whose only change is in those records is not "the same"."""
    if unparsed is None:
        return prof
    row = unparsed.agg(F.count(F.lit(1)).alias("n"), F.bit_xor(F.xxhash64("_wl_row", "_wl_reason")).alias("x")).collect()[0]
    if not row["n"]:
        return prof
    return replace(prof, quarantined=prof.quarantined + row["n"],
                   fingerprint=f"{prof.fingerprint}:unparsed:{row['n']}:{(row['x'] or 0) & (2**64 - 1):016x}")


def _write_quarantine(spark, spec, partition, rows, now_us, *, quarantine: bool, unparsed=None) -> None:
    """Replace the partition's quarantine rows: re-runs never duplicate them. Rows that failed
    validation keep their columns as JSON; records no reader could parse keep their raw text."""
    if not quarantine and not is_delta_table(spec.quarantine_path):
        return
    bad = rows.filter(F.col(REASON).isNotNull() & ~(F.col(REASON).startswith("late") & F.lit(spec.late == "drop")))
    payload = [c for c in rows.columns if not C.is_system(c) and c != REASON]
    at = F.expr(f"timestamp_micros({now_us})").alias("_wl_quarantined_at")
    out = bad.select(
        F.lit(partition).alias(C.PARTITION),
        F.col(REASON).alias("_wl_reason"),
        F.to_json(F.struct(*[F.col(c) for c in payload])).alias("_wl_row"),
        at,
    )
    if unparsed is not None:
        out = out.unionByName(unparsed.select(F.lit(partition).alias(C.PARTITION), "_wl_reason", "_wl_row", at))
    (
        out.write.format("delta").mode("overwrite").partitionBy(C.PARTITION)
        .option("replaceWhere", f"{C.PARTITION} = {sql_string(partition)}")
        .save(spec.quarantine_path)
    )

