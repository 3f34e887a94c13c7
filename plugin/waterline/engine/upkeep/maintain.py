"""Table maintenance over a feed's life: compact, vacuum, checkpoint, clean the log, delete orphan stages.

Every release adds a few small files per tier and partition, and one commit
per tier; left alone, a tier read after a day of one-minute releases opens
hundreds of files and replays a long log. `maintain`, under the feed lease
(so no release or ingest of the feed commits meanwhile), keeps each table flat:

0. **proofs kept** (tiers only): the release proof of the commits since the last kept
   one, kept in ``<warehouse>/<feed>/_wl_proofs`` before vacuum deletes the change data
   it reads (`waterline.engine.proof.release_proof.keep_proofs`); a proof that fails stops the
   maintenance of the tier, so nothing unproven is vacuumed;
1. **retention properties**: ``delta.logRetentionDuration`` and
   ``delta.deletedFileRetentionDuration`` follow the spec's
   ``maintenance.time_travel``, so log cleanup and checkpoints keep exactly the
   versions readers may travel to;
2. **compaction**: Delta's OPTIMIZE (bin-packing, ``dataChange`` false: the
   change data feed gets no rows, readers see the same rows) over the
   partitions that hold more than one file, with Spark's statistics off, then its
   files restated with waterline's (`waterline.engine.delta.restated_stats`: Spark's
   forms make deltalake, polars and DuckDB skip files);
3. **checkpoint and log cleanup** (deltalake), past the log retention, and what
   it leaves (`waterline.engine.upkeep.leftovers`: older checkpoints, checksum files);
4. **vacuum**: files no version within ``time_travel`` names are deleted
   (deltalake lists them, without a commit), the marker files of waterline's
   output committer and the files of long-removed stages among them, then the
   hidden checksum files of deleted files and empty folders (local tables);
5. **orphan stages**: stages that never committed, older than the grace period
   (`waterline.engine.delta.stages.orphan_tokens`).

The retention is never shorter than `waterline.spec.model.MIN_TIME_TRAVEL`
(one hour): longer than a staged release waits to commit (30 minutes) and
than a sharing server's signed URLs live (`waterline share serve` refuses a
``--url-ttl`` longer than a served feed's ``time_travel``).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

from pyspark.sql import SparkSession

from waterline.engine.core import columns as C
from waterline.engine.core.results import MaintainResult, TableMaintenance
from waterline.engine.core.sqltext import delta_path, sql_string
from waterline.engine.delta import storage
from waterline.engine.upkeep.leftovers import checksum_leftovers, log_leftovers, prune_empty_folders
from waterline.engine.delta.objects import delete_objects, delete_tree, list_tree
from waterline.engine.delta.restated_stats import NO_STATS_CONF, restate_compaction
from waterline.engine.delta.stages import GC_AFTER_S, orphan_tokens, table_stage_folder
from waterline.engine.delta.table_log import TableLog
from waterline.engine.tables.feed_tables import FeedTables
from waterline.engine.tables.lease import Lease, feed_lease
from waterline.engine.proof.release_proof import keep_proofs
from waterline.spec import FeedSpec

HELD = "held"
LOG_RETENTION = "delta.logRetentionDuration"
FILE_RETENTION = "delta.deletedFileRetentionDuration"


def maintain(spark: SparkSession, spec: FeedSpec, *, tiers: list[str] | None = None) -> MaintainResult:
    """Maintain ``tiers`` (all by default, and then the held table too) under the feed lease.

    Ages are wall-clock ages, as the store dates files and commits (not the trusted clock,
    which decides waterlines: a test's clock far in the future must not age a stage)."""
    retention_us = spec.maintenance.time_travel_us
    names = list(tiers) if tiers is not None else [*spec.tiers, HELD]
    out: dict[str, TableMaintenance] = {}
    plans = None
    with feed_lease(spec.feed_dir, feed=spec.feed) as lease:
        tables = FeedTables.open(spec)
        for name in names:
            path = spec.held_path if name == HELD else spec.tier_path(name)
            if not tables.log(path).exists:
                continue
            proven = 0
            if name != HELD:
                proven, plans = keep_proofs(spark, spec, name, plans)
            out[name] = replace(_maintain_table(spark, name, tables, path, retention_us=retention_us,
                                                now_s=time.time(), lease=lease), commits_proven=proven)
    return MaintainResult(feed=spec.feed, retention_us=retention_us, tables=out)


def _maintain_table(spark: SparkSession, name: str, tables: FeedTables, path: str, *, retention_us: int,
                    now_s: float, lease: Lease) -> TableMaintenance:
    before = tables.log(path)
    files_before = len(before.add_files())
    _retention_properties(spark, path, before, retention_us, lease)
    compacted = _compact(spark, path, before, lease)
    after = tables.refresh(path).log(path)  # after the property and compaction commits
    log_before = _log_files(path)
    checkpoint = after.checkpoint_and_clean()
    retention_s = retention_us / 1_000_000
    delete_objects(log_leftovers(path, older_than_s=retention_s, now_s=now_s))
    log_removed = max(0, log_before - _log_files(path))
    vacuumed = _vacuum(path, after, retention_us)
    vacuumed += delete_objects(checksum_leftovers(path, older_than_s=retention_s, now_s=now_s))
    staged = sum(delete_tree(table_stage_folder(path, token))
                 for token in orphan_tokens(path, now_s=now_s, older_than_s=GC_AFTER_S))
    prune_empty_folders(path, older_than_s=retention_s, now_s=now_s)
    return TableMaintenance(table=name, files_before=files_before, files_after=len(after.add_files()),
                            files_compacted=compacted, files_vacuumed=vacuumed, staged_files_removed=staged,
                            log_files_removed=log_removed, checkpoint_version=checkpoint)


def _retention_properties(spark: SparkSession, path: str, log: TableLog, retention_us: int, lease: Lease) -> None:
    """The table's log and tombstone retention set to the spec's ``time_travel`` (a property
    commit, made only when they differ)."""
    interval = f"interval {retention_us // 1_000_000} seconds"
    wanted = {LOG_RETENTION: interval, FILE_RETENTION: interval}
    if all(log.configuration.get(k) == v for k, v in wanted.items()):
        return
    lease.check()
    settings = ", ".join(f"'{k}' = {sql_string(v)}" for k, v in wanted.items())
    spark.sql(f"ALTER TABLE {delta_path(path)} SET TBLPROPERTIES ({settings})")


def _compact(spark: SparkSession, path: str, log: TableLog, lease: Lease) -> int:
    """OPTIMIZE the partitions holding more than one file; the number of files it rewrote."""
    counts: dict[str, int] = {}
    for action in log.add_files():
        part = action.partition_values.get(C.PARTITION)
        counts[part] = counts.get(part, 0) + 1
    crowded = sorted(p for p, n in counts.items() if n > 1 and p is not None)
    if not crowded:
        return 0
    lease.check()
    where = ", ".join(sql_string(p) for p in crowded)
    metrics = optimize(spark, path, f"{C.PARTITION} IN ({where})")
    return int(metrics.get("numRemovedFiles", metrics.get("numFilesRemoved", 0)))


def optimize(spark: SparkSession, path: str, where: str | None = None) -> dict[str, int]:
    """Delta's OPTIMIZE of the table at ``path`` (of the partitions ``where`` selects), its
    new files described by waterline's statistics, not Spark's (see
    `waterline.engine.delta.restated_stats`); the compaction's operation metrics."""
    previous = spark.conf.get(NO_STATS_CONF, None)
    spark.conf.set(NO_STATS_CONF, "false")
    try:
        spark.sql(f"OPTIMIZE {delta_path(path)}" + (f" WHERE {where}" if where else "")).collect()
    finally:
        if previous is None:
            spark.conf.unset(NO_STATS_CONF)
        else:
            spark.conf.set(NO_STATS_CONF, previous)
    metrics = TableLog.open(path).last_commit_metrics()
    restate_compaction(path)
    return metrics


def _vacuum(path: str, log: TableLog, retention_us: int) -> int:
    """Delete the files no version within the retention names; the number deleted.

    Stage files among them go too: vacuum names only files older than the retention (at
    least an hour), and a stage is committed within 30 minutes of being staged or never,
    so such a file belongs to a commit since removed, or to a stage that will never commit."""
    hours = max(1, math.ceil(retention_us / 3_600_000_000))
    doomed = [storage.join(path, relative) for relative in log.unreferenced_files(retention_hours=hours)]
    return delete_objects(doomed) if doomed else 0


def _log_files(path: str) -> int:
    return len(list_tree(storage.join(path, "_delta_log")))
