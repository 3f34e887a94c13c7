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
current versions first (a join), a new one is written as is.

The write: Spark writes the versions as Parquet files no reader sees and the
ingest commits them itself (`held_append`): one commit file with the files,
the Delta transaction and the state, with no Spark job to look the
transaction up. A new partition with no earlier fingerprint is written in one
pass that also computes the profile (observed metrics); the duplicate-key
check then reads the key columns of the written files, and a failing check
deletes them. The ingest that creates the held table, and a held table this
writer does not honour, take Spark's Delta writer.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from waterline.clock import Clock, SystemClock
from waterline.engine.core import columns as C
from waterline.engine.core import faults
from waterline.engine.core.event_time import advance_sources, event_waterline
from waterline.engine.core.races import new_token, retry_lost_races
from waterline.engine.core.results import IngestResult
from waterline.engine.core.sqltext import quoted, sql_string
from waterline.engine.core.state import HeldState
from waterline.engine.delta.commit import property_commit, table_unsupported, write_commit
from waterline.engine.tables import feed_tables
from waterline.engine.tables.applied_spec import check_schedules
from waterline.engine.tables.feed_tables import FeedTables
from waterline.engine.tables.lease import Lease, feed_lease
from waterline.engine.delta.storage import is_delta_table
from waterline.engine.delta.table_log import APP_SEQ, TableLog
from waterline.engine.ingest import held_append, row_errors
from waterline.engine.ingest import versions as V
from waterline.engine.spark.commits import commit_state, record_state
from waterline.engine.spark.conflicts import is_commit_conflict
from waterline.engine.ingest.profile import (
    Profile,
    observe_profile,
    observed_profile,
    profile,
    profile_checking_duplicates,
)
from waterline.engine.tables.schedule import check_tiers_scheduled, compile_tiers
from waterline.engine.ingest.source import read_output_and_unparsed
from waterline.engine.spark.errors import hint, spark_message
from waterline.engine.tables.spark_tables import (
    complete_tier_tables, creating_held_table, ensure_tier_tables, payload_schema, table_schema,
)
from waterline.engine.ingest.validate import (
    REASON,
    check_columns,
    check_duplicates,
    check_schema,
    parse_event_time,
    parsed_schema,
    reason_column,
)
from waterline.errors import WaterlineError
from waterline.policy import ReleasePlan
from waterline.spec import FeedSpec

log = logging.getLogger(__name__)
T = TypeVar("T")


def ingest(spark: SparkSession, spec: FeedSpec, partition: str, *, clock: Clock | None = None) -> IngestResult:
    """Process ``partition`` and append what changed to the held table."""
    clock = clock or SystemClock()
    partition = spec.partitions.validate(partition)
    return under_lease(spec, lambda lease: _ingest_locked(spark, spec, partition, clock, lease),
                       what=f"ingest of {partition}", where=f"partition {partition}")


def under_lease(spec: FeedSpec, attempt: Callable[[Lease], T], *, what: str, where: str) -> T:
    """``attempt`` under the feed lease, again after a lost commit race (it recomputes the
    sequence from the new state). Spark failing on the feed's own code or data (the
    transform, the job, a source) is one line naming the feed, ``where`` and Spark's error,
    nothing committed. The partition ingest and the stream's micro-batch both write this way."""
    try:
        with feed_lease(spec.feed_dir, feed=spec.feed) as lease:
            # an apply may have rescheduled held while this run waited for the lease
            check_schedules(spec, feed_tables.held_state(TableLog.open(spec.held_path), spec.feed))
            return retry_lost_races(lambda: attempt(lease), is_race=is_commit_conflict, before_retry=lease.check,
                                    what=f"feed {spec.feed}: {what}")
    except WaterlineError:
        raise
    except Exception as exc:
        message = spark_message(exc)
        if message is None:
            raise
        raise WaterlineError(f"feed {spec.feed}: {where}: {message}{hint(exc)}") from exc


@dataclass(frozen=True)
class _Output:
    """One partition's output as this ingest read it, and what it is checked and diffed against."""

    partition: str
    rows: DataFrame  # every output row, with its quarantine reason (NULL: valid)
    schema: StructType  # of ``rows``, known without asking Spark again (a round trip under Connect)
    payload: list[str]
    plans: dict[str, ReleasePlan]
    unparsed: DataFrame | None  # source records no reader could parse
    tables: FeedTables  # the feed's tables, opened under the lease
    held_log: TableLog  # the held table as read under the lease (kept: not refreshed by this ingest's commit)
    state: HeldState
    now_us: int
    hash_as_text: bool
    #: payload columns `waterline apply` added to held: a trailing NULL one is left out of the row hash
    hash_added: tuple[str, ...] = ()

    @property
    def valid(self) -> DataFrame:
        return self.rows.filter(V.VALID)


def _ingest_locked(spark: SparkSession, spec: FeedSpec, partition: str, clock: Clock, lease: Lease) -> IngestResult:
    out = _read(spark, spec, partition, clock)
    try:
        return _ingest_output(spark, spec, out, lease)
    except Exception as exc:
        # a policy operator failing on one row's value: that row's key, tier and column
        where = row_errors.locate(exc, spec, out.rows, out.plans)
        if where is None:
            raise
        raise WaterlineError(f"feed {spec.feed}: partition {partition}: {where}") from exc


def _ingest_output(spark: SparkSession, spec: FeedSpec, out: _Output, lease: Lease) -> IngestResult:
    """The versions of the partition's output ``out`` appended to held (or nothing, when
    no row changed), and its quarantined rows written."""
    partition = out.partition
    held_log = out.held_log
    # tiers a run killed while creating them left missing: this ingest may not reach its own
    # creation (an unchanged partition returns early)
    complete_tier_tables(spark, spec, held_log)
    fresh = not held_log.exists or partition not in out.tables.held_partitions()
    # What this partition's last ingest committed. A partition with no file in held has
    # nothing its output could equal (its last output had no valid row, or gc dropped
    # them all), so its history (up to 50 commit files read) is not searched.
    previous = None if fresh else out.tables.last_ingest_state(partition)
    known = previous.fingerprint if previous else None
    prof: Profile | None = None
    if known:
        prof = _with_unparsed(profile(spec, out.rows, out.payload, out.plans), out.unparsed)  # it may spare the rest
        if prof.fingerprint == known:  # the same output as last time: no row can differ
            state = _next_state(spec, out, prof)
            _record_moved(spark, spec, out, state, lease=lease)
            return _result(spec, out, prof, V.nothing(spec), state)
        check_duplicates(spec, partition, out.valid)
    elif not fresh or not held_log.exists:  # a diff, or the held table to create: profile and check keys first
        prof = _with_unparsed(profile_checking_duplicates(spec, partition, out.rows, out.payload, out.plans),
                              out.unparsed)
    seq = out.state.seq + 1
    tagged = V.tagged(out.rows, out.schema, out.payload, partition, out.plans, seq=seq,
                      hash_as_text=V.HashForm(out.hash_as_text, out.hash_added))
    columns = V.version_columns(out.payload, spec.tiers)
    stored = V.stored_schema(out.schema, out.payload, spec.tiers, hash_as_text=out.hash_as_text)
    why_not = held_append.direct_unsupported(held_log, stored) if held_log.exists else "the held table is created"
    if why_not is None:
        return _append_directly(spark, spec, out, tagged, prof, fresh=fresh, lease=lease)
    log.info("feed %s: %s appended by Spark's Delta writer: %s", spec.feed, partition, why_not)
    if prof is None:  # a fresh partition of a held table Spark's writer appends to
        prof = _with_unparsed(profile_checking_duplicates(spec, partition, out.rows, out.payload, out.plans),
                              out.unparsed)
    versions = V.new_versions(tagged, columns) if fresh else V.diff(spark, spec, tagged, columns, partition, seq=seq)
    return _append_with_spark(spark, spec, out, versions, prof, fresh=fresh, lease=lease)


def _read(spark: SparkSession, spec: FeedSpec, partition: str, clock: Clock) -> _Output:
    """The partition's output, checked against the spec and the held table, and its tiers' plans."""
    tables = FeedTables.open(spec)
    held_log = tables.held
    state = feed_tables.held_state(held_log, spec.feed)
    now = clock.now_us()
    raw, unparsed = read_output_and_unparsed(spark, spec, partition)
    check_columns(spec, raw)
    payload = [c for c in raw.columns if not C.is_system(c)]
    parsed = parse_event_time(spec, raw)
    schema = parsed_schema(spec, raw.schema)  # the one schema this ingest asks Spark for is raw's
    held_schema = table_schema(held_log) if held_log.exists else None
    if held_schema is not None:
        check_schema(spec, held_schema, schema)
        check_tiers_scheduled(spec, held_schema.fieldNames())
    # Held tables from before the struct row hash keep their 32-hex-digit text hash.
    hash_as_text = held_schema is not None and held_schema[C.HASH].dataType.typeName() == "string"
    plans = compile_tiers(spark, spec, parsed.select(payload), StructType([schema[c] for c in payload]))
    late_before = state.event_w if spec.waterline.mode == "event" else None
    rows = parsed.withColumn(REASON, reason_column(spec, late_before))
    return _Output(partition=partition, rows=rows, schema=StructType([*schema, StructField(REASON, StringType())]),
                   payload=payload, plans=plans, unparsed=unparsed, tables=tables, held_log=held_log, state=state,
                   now_us=now, hash_as_text=hash_as_text,
                   hash_added=tuple(C.added_payload(held_schema.fieldNames())) if held_schema is not None else ())


def _append_directly(spark: SparkSession, spec: FeedSpec, out: _Output, tagged: DataFrame, prof: Profile | None, *,
                     fresh: bool, lease: Lease) -> IngestResult:
    """Spark writes the versions as uncommitted files; one commit of ours makes them the next
    version of the held table (`held_append`). ``prof`` None: a fresh partition profiled by
    the write itself, whose keys are checked in the written files before the commit."""
    token = new_token()
    profiled = counted = None
    if prof is None:
        tagged, profiled = observe_profile(spec, tagged, out.payload, [quoted(C.tau(t)) for t in spec.tiers],
                                           schema=out.schema)
    if fresh:
        versions = tagged.filter(V.VALID)
    else:
        versions = V.diff(spark, spec, tagged, V.version_columns(out.payload, spec.tiers), out.partition,
                          seq=out.state.seq + 1)
        versions, counted = V.observe_counts(spec, versions)
    try:
        # in the held table's column order
        held_append.write(versions, table_schema(out.held_log).fieldNames(), spec.held_path, token, out.partition)
        if profiled is not None:
            prof = _with_unparsed(observed_profile(spec, out.rows, out.payload, out.plans, profiled,
                                                   schema=out.schema), out.unparsed)
            fields = {f.name.lower(): f for f in out.schema.fields}  # Spark's names are case-blind
            key = StructType([fields[k.lower()] for k in spec.key])
            held_append.check_keys(spark, spec, token, out.partition, key)
        counts = _inserts(spec, prof) if fresh else V.observed_counts(spec, counted, versions)
        _write_quarantine(spark, spec, out.partition, out.rows, out.now_us, quarantine=prof.quarantined > 0,
                          unparsed=out.unparsed)
    except BaseException:
        held_append.discard(spec.held_path, token)
        raise
    state = _next_state(spec, out, prof, counts, token=token)
    if not counts["total"]:
        held_append.discard(spec.held_path, token)
        _record_moved(spark, spec, out, state, lease=lease)
        return _result(spec, out, prof, counts, state)
    faults.boundary(faults.INGEST_BEFORE_COMMIT)
    lease.check()  # the last moment a lost lease can stop the commit
    held_append.commit(out.held_log, state, token, record_property=_moved(state, out.state))
    faults.boundary(faults.INGEST_AFTER_COMMIT)
    # held existed before this ingest (its own writer appends only to one): its tiers were
    # completed at the start (`complete_tier_tables`)
    return _result(spec, out, prof, counts, state)


def _append_with_spark(spark: SparkSession, spec: FeedSpec, out: _Output, versions: DataFrame, prof: Profile, *,
                       fresh: bool, lease: Lease) -> IngestResult:
    """The versions appended by Spark's Delta writer, carrying the transaction and the state."""
    if not fresh:  # the diff is counted before the write, which reuses it
        versions = versions.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts = _inserts(spec, prof) if fresh else V.version_counts(spec, versions)
        _write_quarantine(spark, spec, out.partition, out.rows, out.now_us, quarantine=prof.quarantined > 0,
                          unparsed=out.unparsed)
        state = _next_state(spec, out, prof, counts)
        faults.boundary(faults.INGEST_BEFORE_COMMIT)
        if counts["total"]:
            _commit(spark, spec, state, versions, out.state, held_log=out.held_log, lease=lease)
        else:
            _record_moved(spark, spec, out, state, lease=lease)
        faults.boundary(faults.INGEST_AFTER_COMMIT)
        if not out.held_log.exists:  # this ingest created held: its tiers next (else done at the start)
            ensure_tier_tables(spark, spec, payload_schema(out.schema))
    finally:
        if not fresh:
            versions.unpersist()
    return _result(spec, out, prof, counts, state)


def _inserts(spec: FeedSpec, prof: Profile) -> dict:
    """The counts of a partition held has no file of: every valid row is an insert, and the
    profile has counted them and found their earliest takeovers."""
    return dict(V.nothing(spec), total=prof.valid, insert=prof.valid, min_tau=prof.min_tau)


def _next_state(spec: FeedSpec, out: _Output, prof: Profile, counts: dict | None = None, *,
                token: str | None = None) -> HeldState:
    """The held state after this ingest: its fingerprint and event-time bookkeeping, and, when
    it writes versions (``counts``), the next sequence with their count and takeovers."""
    state = out.state
    sources, event_w = state.sources, state.event_w
    if spec.waterline.mode == "event":
        sources = advance_sources(sources, prof.max_event_by_source, out.now_us)
        event_w = event_waterline(spec, sources, state.event_w, out.now_us)
    new = state.evolve(
        op="ingest", partition=out.partition, versions=0, min_tau=V.nothing(spec)["min_tau"],
        fingerprint=prof.fingerprint, sources=sources, event_w=event_w, n=state.n + 1, token=token or new_token(),
    )
    if counts and counts["total"]:
        new = new.evolve(seq=state.seq + 1, versions=counts["total"], min_tau=counts["min_tau"])
    return new


def _moved(new: HeldState, old: HeldState) -> bool:
    return (new.event_w, new.sources) != (old.event_w, old.sources)


def _record_moved(spark: SparkSession, spec: FeedSpec, out: _Output, state: HeldState, *, lease: Lease) -> None:
    """An ingest that writes no version records its state only when the event time moved:
    as the table property, which log cleanup keeps."""
    if not out.held_log.exists or not _moved(state, out.state):
        return
    lease.check()
    if table_unsupported(out.held_log) is None:  # one commit of ours, no JVM (after others' that kept the rows)
        write_commit(out.held_log.snapshot(), property_commit(state))
    else:
        record_state(spark, spec.held_path, state)


def _commit(spark: SparkSession, spec: FeedSpec, new_state: HeldState, versions: DataFrame, old_state: HeldState, *,
            held_log: TableLog, lease: Lease) -> None:
    """Spark's Delta writer appends the versions and the new state in one commit.

    The append carries the Delta transaction (``waterline.seq``, new seq): if a newer
    writer already committed that sequence, Delta skips it and
    `feed_tables.committed_version` raises `SkippedCommit`, so the caller recomputes
    instead of losing the versions. A moved event time also goes into the table
    property, which survives log cleanup. ``held_log`` was read under the feed
    lease, so whether the table exists still holds: no second log read."""
    creating = nullcontext() if held_log.exists else creating_held_table(spark, spec, versions.schema)
    lease.check()  # the last moment a lost lease can stop the commit
    with commit_state(spark, new_state, app=APP_SEQ, version=new_state.seq), creating:
        versions.drop(V.KIND).write.format("delta").mode("append").partitionBy(C.PARTITION).save(spec.held_path)
    feed_tables.committed_version(TableLog.open(spec.held_path), new_state.token, after=held_log.version)
    if _moved(new_state, old_state):
        record_state(spark, spec.held_path, new_state)


def _result(spec: FeedSpec, out: _Output, prof: Profile, counts: dict, state: HeldState) -> IngestResult:
    """What the ingest did; ``state``: the held state after it (its seq is new iff it wrote versions)."""
    due = [t for t in counts["min_tau"].values() if t is not None]
    return IngestResult(
        feed=spec.feed, partition=out.partition, seq=state.seq if counts["total"] else None,
        rows_read=prof.rows, versions_written=counts["total"], inserted=counts["insert"],
        updated=counts["update"], removed=counts["remove"],
        unchanged=prof.valid - counts["insert"] - counts["update"],
        quarantined=prof.quarantined, late_dropped=prof.late_dropped,
        event_waterline_us=state.event_w, next_due_us=max(min(due), out.now_us) if due else None,
    )


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

