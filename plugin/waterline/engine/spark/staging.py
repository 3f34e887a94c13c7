"""Stage a release before its instant: every tier's change, written as uncommitted files.

The same plan as `waterline.engine.spark.release` (candidates, governing
versions at W, `release.desired_rows`), but instead of a MERGE after the
instant, the tier rows that change are found and written ahead as Delta would
write them: new data files for the rewritten and inserted rows, change-data
files (``_change_type`` insert, delete, update_preimage, update_postimage) when
rows are updated or deleted, and the add/remove/cdc actions naming them, with
file statistics. Nothing is committed and no lease is taken: readers of the
tier see none of it. `waterline.engine.log.staged.commit_staged` commits it at
the instant, after checking that the held table and the tiers did not move.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, ShortType, StructType

from waterline.clock import Clock
from waterline.engine.core import columns as C
from waterline.engine.core.event_time import target_waterline
from waterline.engine.core.held_stats import candidate_partitions, single_ingest_partitions
from waterline.engine.core.races import new_token
from waterline.engine.core.results import TierRelease
from waterline.engine.core.state import TierState
from waterline.engine.log.delta_commit import FileActions, unsupported
from waterline.engine.log.staged import STAGE_DIR, StagedRelease, StagedTier, stage_folder
from waterline.engine.log.table_log import TableLog
from waterline.engine.spark.planning import PRESENT, REASON, TierStep, desired_rows, plan_step, tier_outlook
from waterline.engine.spark.tables import change_feed_enabled, table_schema
from waterline.spec import FeedSpec

log = logging.getLogger(__name__)

_FILE = "_wl_file"
_ACTION = "_wl_action"
_CHANGE_TYPE = "_change_type"
_EXACT_STATS = (LongType, IntegerType, ShortType)  # min/max written exactly (see `_stats`)


def stage(spark: SparkSession, spec: FeedSpec, *, w_us: int, clock: Clock, target_us: int | None = None,
          staged_at_us: int | None = None) -> StagedRelease | None:
    """Compute and write the release at ``w_us``; None when this feed cannot be staged (no
    held table yet, a tier whose Delta protocol `delta_commit` does not write, a tier without
    its change data feed yet): the release then runs the Spark path.

    ``target_us``: the W a release under the lease already computed (else the W the clock
    at ``w_us`` allows); ``staged_at_us``: its clock reading (else the clock is read)."""
    held_log = TableLog.open(spec.held_path)
    if not held_log.exists or held_log.version is None:
        return None
    tier_logs = {t: TableLog.open(spec.tier_path(t)) for t in spec.tiers}
    for tier, tier_log in tier_logs.items():
        reason = unsupported(tier_log) or (None if change_feed_enabled(tier_log) else "no change data feed yet")
        if reason is not None:
            log.info("feed %s: release not pre-staged: tier %s: %s", spec.feed, tier, reason)
            return None
    held_state = held_log.held_state(spec.feed)
    seq = held_state.seq
    target = target_us if target_us is not None else target_waterline(spec, held_state, w_us, w_us)
    held = _read(spark, spec.held_path, held_log.version).filter(f"{C.SEQ} <= {seq}")
    token = new_token()
    steps: list[TierStep] = []
    settled: list[TierRelease] = []
    for tier in spec.tiers:
        # the state from the same snapshot as the version the commit will check
        step = plan_step(spec, tier, held, target, seq, state=tier_logs[tier].tier_state())
        (settled if isinstance(step, TierRelease) else steps).append(step)
    staged_tiers: list[StagedTier] = []
    if steps:
        files = held_log.held_files(spec.tiers)
        outlooks = tier_outlook(held, files, steps)
        single = single_ingest_partitions(files)
        for step in steps:
            next_due, pending = outlooks[step.tier]
            state = TierState(op="release", tier=step.tier, w=step.w, seq=step.seq, hold=False,
                              next_due=next_due, pending=pending, n=step.n, token=token)
            partitions = candidate_partitions(files, step.tier, low=step.low, s0=step.s0, w=step.w)
            staged_tiers.append(_stage_tier(spark, spec, step, state, held, partitions, single,
                                            tier_logs[step.tier], token))
    return StagedRelease(
        feed=spec.feed, token=token, w_us=target, seq=seq, held_version=held_log.version,
        tier_versions={t: tier_logs[t].version for t in spec.tiers}, staged_at_us=clock.now_us() if staged_at_us is None else staged_at_us,
        steps=tuple(staged_tiers), settled=tuple(settled),
    )


def _read(spark: SparkSession, path: str, version: int) -> DataFrame:
    return spark.read.format("delta").option("versionAsOf", version).load(path)


def _stage_tier(spark: SparkSession, spec: FeedSpec, step: TierStep, state: TierState, held: DataFrame,
                partitions: list[str], single: set[str], tier_log: TableLog, token: str) -> StagedTier:
    """One tier's files at ``step.w``: its rows that change, rewritten around the ones that do not."""
    staged = StagedTier(tier=step.tier, state=state, previous_w_us=step.w0, files=FileActions())
    if not partitions:
        return staged
    keys = [C.PARTITION, *spec.key]
    payload = [c for c in held.columns if not C.is_system(c)]
    schema = table_schema(tier_log)
    columns = [f.name for f in schema.fields]
    desired = desired_rows(held, step, keys, payload, partitions, single)
    old = (
        _read(spark, spec.tier_path(step.tier), tier_log.version)
        .filter(F.col(C.PARTITION).isin(partitions))
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
        counts: dict[tuple[str | None, str], int] = {
            (r[_ACTION], r[REASON]): r["n"]
            for r in changes.groupBy(_ACTION, REASON).agg(F.count(F.lit(1)).alias("n")).collect()
        }
        by_action = {a: sum(n for (x, _), n in counts.items() if x == a) for a in ("insert", "update", "delete")}
        reasons: dict[str, int] = {}
        for (_, reason), n in counts.items():
            reasons[reason] = reasons.get(reason, 0) + n
        staged = StagedTier(
            tier=step.tier, state=state, previous_w_us=step.w0, files=FileActions(),
            released=by_action["insert"], updated=by_action["update"], removed=by_action["delete"],
            expired=min(reasons.get("expired", 0), by_action["delete"]), candidates=sum(reasons.values()),
        )
        if not any(by_action.values()):
            return staged
        files = _write_files(spark, spec, step.tier, token, changes, old, keys, columns, schema, by_action, tier_log)
        return replace(staged, files=files)
    finally:
        changes.unpersist()


def _write_files(spark: SparkSession, spec: FeedSpec, tier: str, token: str, changes: DataFrame, old: DataFrame,
                 keys: list[str], columns: list[str], schema: StructType, by_action: dict[str, int],
                 tier_log: TableLog) -> FileActions:
    """Write the tier's new data files (and change-data files) under the stage folder; their actions."""
    new_values = [F.col(f"n_{c}").alias(c) for c in columns]
    old_values = [F.col(f"o_{c}").alias(c) for c in columns]
    rewritten = changes.filter(F.col(_ACTION).isin("update", "delete"))
    touched = sorted(r[_FILE] for r in rewritten.select(_FILE).distinct().collect())
    kept = (
        old.filter(F.col(_FILE).isin(touched))
        .join(rewritten.select(*[F.col(f"o_{k}").alias(k) for k in keys]), on=keys, how="left_anti")
        .select(*columns)
    )
    new_rows = kept.unionByName(changes.filter(F.col(_ACTION).isin("update", "insert")).select(*new_values))
    folder = stage_folder(spec, tier, token)
    (new_rows.repartition(C.PARTITION).write.partitionBy(C.PARTITION).mode("error")
     .parquet(f"{folder}/data"))
    adds = [
        {"path": _relative(r["path"], token), "partitionValues": {C.PARTITION: r[C.PARTITION]},
         "size": r["size"], "modificationTime": r["mtime"], "dataChange": True, "stats": _stats(r, schema)}
        for r in _written(spark, f"{folder}/data", schema, stats=True)
    ]
    cdcs: list[dict] = []
    if by_action["update"] or by_action["delete"]:
        change_type = F.col(_ACTION)
        cdc_rows = (
            changes.filter(F.col(_ACTION).isin("update", "delete"))
            .select(*old_values, F.when(change_type == "update", "update_preimage").otherwise("delete").alias(_CHANGE_TYPE))
            .unionByName(
                changes.filter(F.col(_ACTION).isin("update", "insert"))
                .select(*new_values, F.when(change_type == "update", "update_postimage").otherwise("insert")
                        .alias(_CHANGE_TYPE))
            )
        )
        (cdc_rows.repartition(C.PARTITION).write.partitionBy(C.PARTITION).mode("error")
         .parquet(f"{folder}/cdc"))
        cdc_schema = StructType([*schema.fields]).add(_CHANGE_TYPE, "string")
        cdcs = [
            {"path": _relative(r["path"], token), "partitionValues": {C.PARTITION: r[C.PARTITION]},
             "size": r["size"], "dataChange": False}
            for r in _written(spark, f"{folder}/cdc", cdc_schema, stats=False)
        ]
    removes = _removes(tier_log, touched)
    metrics = {
        "numTargetRowsInserted": by_action["insert"], "numTargetRowsUpdated": by_action["update"],
        "numTargetRowsDeleted": by_action["delete"], "numTargetFilesAdded": len(adds),
        "numTargetFilesRemoved": len(removes), "numTargetChangeFilesAdded": len(cdcs),
    }
    return FileActions(adds=tuple(adds), removes=tuple(removes), cdcs=tuple(cdcs),
                       metrics={k: str(v) for k, v in metrics.items()})


def _written(spark: SparkSession, folder: str, schema: StructType, *, stats: bool) -> list:
    """The parquet files under ``folder`` (one Spark pass): path, size, mtime, partition, and
    with ``stats`` the row count, null counts and exact min/max (see `_stats`)."""
    df = spark.read.schema(schema).parquet(folder)
    aggs = [F.count(F.lit(1)).alias("_n")]
    if stats:
        for f in schema.fields:
            if f.name == C.PARTITION or isinstance(f.dataType, StructType) or "<" in f.dataType.simpleString():
                continue
            aggs.append(F.sum(F.when(F.col(f"`{f.name}`").isNull(), 1).otherwise(0)).alias(f"_null_{f.name}"))
            if isinstance(f.dataType, _EXACT_STATS):
                aggs += [F.min(f"`{f.name}`").alias(f"_min_{f.name}"), F.max(f"`{f.name}`").alias(f"_max_{f.name}")]
    return (
        df.groupBy(
            F.col("_metadata.file_path").alias("path"), F.col("_metadata.file_size").alias("size"),
            F.unix_millis(F.col("_metadata.file_modification_time")).alias("mtime"), F.col(C.PARTITION),
        ).agg(*aggs).collect()
    )


def _stats(row, schema: StructType) -> str:
    """Delta statistics: row and null counts, min/max of integer columns only.

    Spark writes timestamp bounds truncated to milliseconds and string bounds as
    prefixes, each with its own adjustment for max values; a bound written wrongly
    would let a reader skip a file that holds matching rows, so only bounds that are
    exact by construction are written. A column without bounds is never skipped.
    """
    d = row.asDict()
    nulls = {k[len("_null_"):]: int(v) for k, v in d.items() if k.startswith("_null_")}
    mins = {k[len("_min_"):]: v for k, v in d.items() if k.startswith("_min_") and v is not None}
    maxs = {k[len("_max_"):]: v for k, v in d.items() if k.startswith("_max_") and v is not None}
    order = [f.name for f in schema.fields]
    return json.dumps({
        "numRecords": int(d["_n"]),
        "minValues": {c: mins[c] for c in order if c in mins},
        "maxValues": {c: maxs[c] for c in order if c in maxs},
        "nullCount": {c: nulls[c] for c in order if c in nulls},
    }, separators=(",", ":"))


def _relative(uri: str, token: str) -> str:
    """A staged file's path relative to the tier table (URL-encoded, as Delta writes paths)."""
    marker = f"/{STAGE_DIR}/{token}/"
    return uri[uri.index(marker) + 1:]


def _removes(tier_log: TableLog, touched: list[str]) -> list[dict]:
    """Remove actions for the tier files Spark read as ``touched`` (absolute URIs), with the
    paths, partition values and sizes the table's log has for them."""
    if not touched:
        return []
    actions = tier_log.file_actions()
    by_path = {unquote(unquote(a["path"])): a for a in actions}
    out = []
    for uri in touched:
        plain = unquote(unquote(uri))
        match = next((a for p, a in by_path.items() if plain.endswith("/" + p)), None)
        if match is None:
            raise RuntimeError(f"{tier_log.path}: file {uri} read by Spark is not in version {tier_log.version}")
        out.append({"path": match["path"], "dataChange": True, "extendedFileMetadata": True,
                    "partitionValues": match["partitionValues"], "size": match["size"]})
    return out
