"""State cleaning: drop held versions that can never change any tier again.

A version is dead when, in every tier, a newer version of its identity has
already taken over (takeover <= W_T): the governing version only moves forward
in seq as W grows, so the dead one can never govern again. The newest version of
an identity is kept (ingest diffs against it) unless it is a removal every tier
has applied, in which case the identity is forgotten entirely. A tier that was
never released keeps everything.

gc also deletes the files of pre-staged releases and held appends that never
committed (a discarded stage, a crash between Spark's write and the commit)
once they are older than the grace period
(`waterline.engine.delta.stages.orphan_tokens`).
"""

from __future__ import annotations

import time
from dataclasses import replace

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from waterline.engine.core import columns as C
from waterline.engine.core.races import new_token
from waterline.engine.core.results import GcResult
from waterline.engine.core.sqltext import delta_path
from waterline.engine.tables.feed_tables import FeedTables
from waterline.engine.tables.lease import Lease, feed_lease
from waterline.engine.delta.objects import delete_tree
from waterline.engine.delta.stages import GC_AFTER_S, orphan_tokens, table_stage_folder
from waterline.engine.delta.table_log import APP_COMMIT
from waterline.engine.spark.commits import commit_state, record_state
from waterline.engine.upkeep.maintain import optimize
from waterline.engine.tables.spark_tables import read_delta
from waterline.engine.spark.views import temp_view
from waterline.spec import FeedSpec


def gc(spark: SparkSession, spec: FeedSpec, *, compact: bool = True, stage_grace_s: float = GC_AFTER_S) -> GcResult:
    """Delete the held versions no tier can ever need again; compact what is left; delete the
    staged files of releases and held appends that never committed and are older than
    ``stage_grace_s``."""
    tables = FeedTables.open(spec)
    if not tables.held.exists:
        return GcResult(feed=spec.feed, versions_before=0, versions_removed=0, files_compacted=False)
    with feed_lease(spec.feed_dir, feed=spec.feed) as lease:
        # what was read before the lease may be stale: read again under it
        result = _gc_locked(spark, tables.refresh(), compact=compact, lease=lease)
        now_s = time.time()  # stage files are dated by the store's clock, not by the trusted release clock
        staged = sum(delete_tree(table_stage_folder(table, token))
                     for table in (spec.held_path, *map(spec.tier_path, spec.tiers))
                     for token in orphan_tokens(table, now_s=now_s, older_than_s=stage_grace_s))
    return replace(result, staged_files_removed=staged)


def _gc_locked(spark: SparkSession, tables: FeedTables, *, compact: bool, lease: Lease) -> GcResult:
    spec = tables.spec
    held_state, tiers = tables.held_state(), tables.tier_states()
    held = read_delta(spark, spec.held_path)
    total = held.count()
    if any(s.w is None for s in tiers.values()):
        return GcResult(feed=spec.feed, versions_before=total, versions_removed=0, files_compacted=False)
    keys = [C.PARTITION, *spec.key]
    applied_seq = min(s.seq for s in tiers.values())
    per_identity = held.groupBy(*keys).agg(
        F.max(C.SEQ).alias("_newest"),
        *[F.max(F.when(F.col(C.tau(t)) <= s.w, F.col(C.SEQ))).alias(f"_g{i}")
          for i, (t, s) in enumerate(tiers.items())],
    )
    superseded = F.lit(True)
    for i in range(len(tiers)):
        superseded = superseded & (F.col(C.SEQ) < F.coalesce(F.col(f"_g{i}"), F.lit(-1)))
    forgotten_removal = (
        (F.col(C.SEQ) == F.col("_newest")) & F.col(C.REMOVED) & (F.col(C.SEQ) <= applied_seq)
    )
    dead = (
        held.join(per_identity, on=keys)
        .filter(superseded | forgotten_removal)
        .select(*keys, C.SEQ)
        .cache()
    )
    removed = dead.count()
    n = held_state.n + 1
    state = held_state.evolve(op="gc", n=n, token=new_token())
    lease.check()
    if removed:  # deleting dead versions is idempotent anyway; the txn makes a replay skip
        with commit_state(spark, state, app=APP_COMMIT, version=n):
            on = " AND ".join(f"h.`{k}` = d.`{k}`" for k in [*keys, C.SEQ])
            with temp_view(dead, "_wl_dead") as source:  # SQL: the same over Spark Connect
                spark.sql(f"MERGE INTO {delta_path(spec.held_path)} AS h USING {source} AS d ON {on} "
                          "WHEN MATCHED THEN DELETE")
        # The held state (seq, event time) must stay findable after log cleanup too.
        record_state(spark, spec.held_path, state)
    with commit_state(spark, state):
        if compact and removed:
            optimize(spark, spec.held_path)
    dead.unpersist()
    return GcResult(feed=spec.feed, versions_before=total, versions_removed=removed,
                    files_compacted=bool(compact and removed))
