"""Stage a release before its instant: every tier's change, written as uncommitted files.

The same plan as `waterline.engine.release.release` (candidates, governing
versions at W, `release.desired_rows`), but instead of a MERGE after the
instant, the tier rows that change are found and written ahead as Delta would
write them: new data files for the rewritten and inserted rows, change-data
files (``_change_type`` insert, delete, update_preimage, update_postimage) when
rows are updated or deleted, and the add/remove/cdc actions naming them, with
file statistics from the files' footers (`waterline.engine.delta.parquet_files`).
Partitions the tier has no file in yet take a shorter route: no tier read, no
join, one pass writing the present rows. Nothing is committed and no lease is
taken: readers of the tier see none of it.
`waterline.engine.release.prestaged.commit_staged` commits it at the instant, after
checking that the held table and the tiers did not move.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from waterline.clock import Clock
from waterline.engine.core import columns as C
from waterline.engine.release.driver_step import CHANGE_TYPE, step_outlook
from waterline.engine.core.event_time import target_waterline
from waterline.engine.core.held_stats import candidate_scope, single_ingest_partitions, step_files
from waterline.engine.core.races import new_token
from waterline.engine.core.results import TierRelease
from waterline.engine.core.state import TierState
from waterline.engine.delta.arrow_files import DataFile
from waterline.engine.delta.commit import FileActions, table_unsupported
from waterline.engine.delta.gate import warn_slow_path
from waterline.engine.delta.table_log import TableLog
from waterline.engine.tables import applied_spec, feed_tables
from waterline.engine.release.prestaged import StagedRelease, StagedTier, stage_folder
from waterline.engine.release.step_files import FILE_COLUMN, change_actions, counted_changes, inserts_staged, stage_tier
from waterline.engine.spark import observed
from waterline.engine.spark.committer import write_parquet
from waterline.engine.spark.local_frames import arrow_schema, fits, read_local, spark_frame
from waterline.engine.release.planning import PRESENT, REASON, desired_rows, plan_step, tier_outlook
from waterline.engine.release.step_context import StepContext, TierStep
from waterline.engine.tables.spark_tables import change_feed_enabled, table_schema
from waterline.spec import FeedSpec

log = logging.getLogger(__name__)

_FILE = FILE_COLUMN
_ACTION = "_wl_action"


def stage(spark: SparkSession, spec: FeedSpec, *, w_us: int, clock: Clock, target_us: int | None = None,
          held_log: TableLog | None = None, tiers: Sequence[str] | None = None) -> StagedRelease | None:
    """Compute and write the release at ``w_us``; None when this feed cannot be staged (no
    held table yet, a tier whose Delta protocol `delta_commit` does not write, a tier without
    its change data feed yet): the release then runs the Spark path.

    ``target_us``: the W a release under the lease already computed (else the W the clock
    at ``w_us`` allows); the release is staged at ``clock``'s reading (a release under the
    lease passes a clock fixed at its own reading);
    ``held_log``: the held table's log as that release read it (else it is read);
    ``tiers``: stage only these (else every tier)."""
    held_log = held_log or TableLog.open(spec.held_path)
    if not held_log.exists or held_log.version is None:
        return None
    tier_logs = {t: TableLog.open(spec.tier_path(t)) for t in (spec.tiers if tiers is None else tiers)}
    for tier, tier_log in tier_logs.items():
        unsupported = table_unsupported(tier_log)
        if unsupported is not None and tier_log.exists:  # no table yet: the release creates it
            warn_slow_path(tier_log.path, unsupported)
        reason = unsupported or (None if change_feed_enabled(tier_log) else "no change data feed yet")
        if reason is not None:
            log.info("feed %s: release not pre-staged: tier %s: %s", spec.feed, tier, reason)
            return None
    version = applied_spec.in_force(spec, held_log)  # checked again under the lease before the commit
    held_state = feed_tables.held_state(held_log, spec.feed)
    seq = held_state.seq
    target = target_us if target_us is not None else target_waterline(spec, held_state, w_us, w_us)
    held_schema = table_schema(held_log)
    token = new_token()
    steps: list[TierStep] = []
    settled: list[TierRelease] = []
    for tier in tier_logs:
        # the state from the same snapshot as the version the commit will check
        step = plan_step(spec, tier, held_schema.fieldNames(), target, seq, log=tier_logs[tier], held_state=held_state)
        if isinstance(step, TierStep) and step.reconcile:
            log.info("feed %s: release not pre-staged: tier %s reconciles (another writer changed it, or an "
                     "apply rescheduled it)", spec.feed, tier)
            return None  # the Spark path reconciles it (a MERGE that also deletes what no version accounts for)
        (settled if isinstance(step, TierRelease) else steps).append(step)
    staged_tiers: list[StagedTier] = []
    if steps:
        files = feed_tables.held_files(held_log, spec.tiers)
        single = single_ingest_partitions(files)
        planned = []
        for step in steps:
            scope = candidate_scope(files, step.tier, low=step.low, s0=step.since, w=step.w)
            read = step_files(files, step.tier, w=step.w, seq=step.seq, scope=scope)
            planned.append((step, scope, read if fits(read.rows) else None))
        in_spark = [step for step, _, read in planned if read is None]
        spark_held = _read(spark, spec.held_path, held_log.version).filter(f"{C.SEQ} <= {seq}") if in_spark else None
        outlooks = tier_outlook(spark_held, files, in_spark) if in_spark else {}
        for step, scope, read in planned:
            state = TierState(op="release", tier=step.tier, w=step.w, seq=step.seq, hold=False, n=step.n, token=token,
                              spec=version)
            ctx = StepContext(spec=spec, step=step, state=state, tier_log=tier_logs[step.tier], scope=scope,
                              single=single)
            if read is None:
                next_due, pending = outlooks[step.tier]
                ctx = replace(ctx, state=replace(state, next_due=next_due, pending=pending))
                staged_tiers.append(_stage_tier(spark, ctx, spark_held))
                continue
            held = read_local(spec.held_path, [DataFile(f.path, {C.PARTITION: f.partition}) for f in read.files],
                              held_schema)
            held = held.filter(pc.less_equal(held.column(C.SEQ), seq))
            next_due, pending = step_outlook(held, step.tier, step.w, pending=read.pending, next_due=read.next_due)
            ctx = replace(ctx, state=replace(state, next_due=next_due, pending=pending))
            staged_tiers.append(_stage_small(spark, ctx, held, held_schema))
    return StagedRelease(
        feed=spec.feed, token=token, w_us=target, seq=seq, held=held_log.snapshot(), staged_at_us=clock.now_us(),
        steps=tuple(staged_tiers), settled=tuple(settled), spec_version=version,
    )


def _read(spark: SparkSession, path: str, version: int) -> DataFrame:
    return spark.read.format("delta").option("versionAsOf", version).load(path)


def _stage_small(spark: SparkSession, ctx: StepContext, held: pa.Table, held_schema: StructType) -> StagedTier:
    """A tier step whose held rows were read on the driver (``held``): computed there too
    (`step_files.stage_tier`) when the tier's rows of its partitions are few as well,
    else by Spark over ``held`` as a local relation."""
    tier_log = ctx.tier_log
    staged = _staged(ctx)
    if not ctx.scope.partitions:
        return staged
    in_tier = feed_tables.partitions(tier_log).intersection(ctx.scope.partitions)
    if not in_tier or fits(feed_tables.row_count(tier_log, sorted(in_tier))):
        tier_schema = arrow_schema(table_schema(tier_log))
        return stage_tier(ctx, staged, held, tier_schema, in_tier=in_tier)
    frame = spark_frame(spark, held, held_schema)
    return _stage_tier(spark, ctx, frame)


def _staged(ctx: StepContext) -> StagedTier:
    """A tier step that changes nothing yet: its base, state and result."""
    state = ctx.state
    return StagedTier(base=ctx.tier_log.snapshot(), state=state, files=FileActions(), result=TierRelease(
        tier=ctx.tier, w_us=state.w, previous_w_us=ctx.step.w0, seq=state.seq, next_due_us=state.next_due))


def _stage_tier(spark: SparkSession, ctx: StepContext, held: DataFrame) -> StagedTier:
    """One tier's files at ``step.w``, computed by Spark: its rows that change, rewritten
    around the ones that do not."""
    spec, step, tier_log, token = ctx.spec, ctx.step, ctx.tier_log, ctx.token
    staged = _staged(ctx)
    partitions = list(ctx.scope.partitions)
    if not partitions:
        return staged
    keys = ctx.keys
    payload = [c for c in held.columns if not C.is_system(c)]
    schema = table_schema(tier_log)
    columns = [f.name for f in schema.fields]
    desired = desired_rows(held, step, keys, payload, ctx.scope, ctx.single)
    in_tier = sorted(feed_tables.partitions(tier_log).intersection(partitions))
    if not in_tier:  # partitions the tier has no row in yet: every present row is an insert
        return _stage_inserts(spec, staged, desired, columns, token,
                              shuffle=any(p not in ctx.single for p in partitions))
    old = (
        _read(spark, spec.tier_path(step.tier), tier_log.version)
        .filter(F.col(C.PARTITION).isin(in_tier))
        .select(*columns, F.col("_metadata.file_path").alias(_FILE))
    )
    s, t = desired.alias("s"), old.alias("t")
    changed = " OR ".join(f"t.{c} <> s.{c}" for c in (C.SEQ, C.START, C.END))
    changes = (
        s.join(t, on=[F.col(f"s.`{k}`") == F.col(f"t.`{k}`") for k in keys], how="left")
        .select(
            *[F.col(f"s.`{c}`").alias(f"n_{c}") for c in columns],
            *[F.col(f"t.`{c}`").alias(f"o_{c}") for c in columns],
            F.col(f"t.{_FILE}").alias(_FILE), F.col(f"s.{REASON}").alias(REASON),
            F.when(F.col(f"t.{_FILE}").isNull(), F.when(F.col(f"s.{PRESENT}"), F.lit("insert")))
            .when(~F.col(f"s.{PRESENT}"), F.lit("delete"))
            .when(F.expr(changed), F.lit("update"))
            .alias(_ACTION),
        )
        .cache()
    )
    try:
        # one job counts the changes and names the tier files they rewrite
        rewrites = F.col(_ACTION).isin("update", "delete")
        found = changes.groupBy(_ACTION, REASON).agg(
            F.count(F.lit(1)).alias("n"), F.collect_set(F.when(rewrites, F.col(_FILE))).alias("files")).collect()
        touched = sorted(set().union(*(r["files"] for r in found)))
        staged, by_action = counted_changes(staged, {(r[_ACTION], r[REASON]): r["n"] for r in found})
        if not any(by_action.values()):
            return staged
        _write_files(ctx, changes, old, columns, by_action, touched)
        return replace(staged, files=change_actions(spec, step.tier, token, by_action, tier_log, touched))
    finally:
        changes.unpersist()


def _stage_inserts(spec: FeedSpec, staged: StagedTier, desired: DataFrame, columns: list[str], token: str,
                   *, shuffle: bool) -> StagedTier:
    """A tier step whose partitions have no tier row yet: no tier read, no join, no change
    data; the present rows are written in one pass that also counts the candidates.

    ``shuffle``: rows come out of a grouping, spread over its shuffle partitions; one
    shuffle by partition keeps one file per partition and task as the single-ingest
    scan has without it."""
    folder = stage_folder(spec, staged.tier, token)
    counts = _write_inserts(desired, columns, f"{folder}/data", token, staged.tier, shuffle=shuffle)
    return inserts_staged(spec, staged, token, candidates=counts["candidates"], present=counts["present"])


def _write_inserts(desired: DataFrame, columns: list[str], folder: str, token: str, tier: str, *,
                   shuffle: bool) -> dict[str, int]:
    """Spark writes the present rows under ``folder``; the candidates and present rows counted in that pass."""
    observation = Observation(f"waterline_stage_{token}_{tier}")
    counts = (F.count(F.lit(1)).alias("candidates"), F.count(F.when(F.col(PRESENT), 1)).alias("present"))
    rows = desired.observe(observation, *counts).filter(F.col(PRESENT)).select(*columns)
    if shuffle:
        rows = rows.repartition(C.PARTITION)
    write_parquet(rows, folder, mode="error", partition_by=C.PARTITION)
    return observed.counted(observation, desired, list(counts))


def _write_files(ctx: StepContext, changes: DataFrame, old: DataFrame, columns: list[str], by_action: dict[str, int],
                 touched: list[str]) -> None:
    """Write the tier's new data files (and change-data files when rows are updated or
    deleted) under the stage folder: the rows that stay in the ``touched`` tier files (those
    holding a row updated or deleted), and the updated and inserted rows."""
    keys = ctx.keys
    new_values = [F.col(f"n_{c}").alias(c) for c in columns]
    old_values = [F.col(f"o_{c}").alias(c) for c in columns]
    rewritten = changes.filter(F.col(_ACTION).isin("update", "delete"))
    kept = (
        old.filter(F.col(_FILE).isin(touched))
        .join(rewritten.select(*[F.col(f"o_{k}").alias(k) for k in keys]), on=keys, how="left_anti")
        .select(*columns)
    )
    new_rows = kept.unionByName(changes.filter(F.col(_ACTION).isin("update", "insert")).select(*new_values))
    folder = stage_folder(ctx.spec, ctx.tier, ctx.token)
    _write(new_rows, f"{folder}/data")
    if by_action["update"] or by_action["delete"]:
        change_type = F.col(_ACTION)
        cdc_rows = (
            rewritten
            .select(*old_values,
                    F.when(change_type == "update", "update_preimage").otherwise("delete").alias(CHANGE_TYPE))
            .unionByName(
                changes.filter(F.col(_ACTION).isin("update", "insert"))
                .select(*new_values, F.when(change_type == "update", "update_postimage").otherwise("insert")
                        .alias(CHANGE_TYPE))
            )
        )
        _write(cdc_rows, f"{folder}/cdc")


def _write(rows: DataFrame, folder: str) -> None:
    write_parquet(rows.repartition(C.PARTITION), folder, mode="error", partition_by=C.PARTITION)
