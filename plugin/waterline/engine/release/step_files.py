"""A staged tier step's files and actions, and the whole step of a small release on the driver.

`waterline.engine.release.prestage` computes a step's changes in Spark or, when the rows are
few, here (`stage_tier`, with `waterline.engine.release.driver_step`): the held rows and the
tier's rows are read with pyarrow, the changes computed in the process and the files
written from it. Both ways end in the same actions (`counted_changes`, `change_actions`):
add actions with statistics from the written files' footers, remove actions for the tier
files rewritten as the tier's log names them, change-data actions, and Delta MERGE's
operation metrics.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence
from urllib.parse import unquote

import pyarrow as pa

from waterline.engine.core import columns as C
from waterline.engine.release.driver_step import PRESENT, desired_rows, tier_changes
from waterline.engine.delta.actions import AddFile, RemoveFile
from waterline.engine.delta.arrow_files import DataFile, read_files, write_partitioned
from waterline.engine.delta.commit import FileActions
from waterline.engine.delta.objects import delete_tree
from waterline.engine.delta.parquet_files import written_files
from waterline.engine.delta.stages import STAGE_DIR
from waterline.engine.delta.table_log import TableLog
from waterline.engine.release.prestaged import StagedTier, stage_folder
from waterline.engine.release.step_context import StepContext
from waterline.spec import FeedSpec

#: The column naming each tier row's file in a step's read of the tier.
FILE_COLUMN = "_wl_file"


def stage_tier(ctx: StepContext, staged: StagedTier, held: pa.Table, tier_schema: pa.Schema, *,
               in_tier: set[str]) -> StagedTier:
    """One tier step computed and written from the driver: ``held``, the held rows the step
    reads (`held_stats.step_files`, at most the release's seq); ``tier_schema``: the tier's
    columns; ``in_tier``: the step's partitions the tier has files in."""
    spec, tier_log, token, keys = ctx.spec, ctx.tier_log, ctx.token, ctx.keys
    desired = desired_rows(held, ctx.bounds, keys, partitions=ctx.scope.partitions, seq_floor=ctx.scope.seq_floor)
    folder = stage_folder(spec, staged.tier, token)
    if not in_tier:  # the tier has no row in these partitions yet: every present row is an insert
        present = desired.column(PRESENT)
        rows = desired.filter(present).select(tier_schema.names).cast(tier_schema)
        write_partitioned(rows, f"{folder}/data", partition_by=C.PARTITION)
        return inserts_staged(spec, staged, token, candidates=desired.num_rows, present=rows.num_rows)
    files = [DataFile(a.path, a.partition_values) for a in tier_log.add_files()
             if a.partition_values.get(C.PARTITION) in in_tier]
    old = read_files(spec.tier_path(staged.tier), files, tier_schema, file_column=FILE_COLUMN)
    changes = tier_changes(desired, old, keys, tier_schema, file_column=FILE_COLUMN)
    staged, by_action = counted_changes(staged, changes.counts)
    if not any(by_action.values()):
        return staged
    write_partitioned(changes.new_rows, f"{folder}/data", partition_by=C.PARTITION)
    if changes.cdc_rows is not None:
        write_partitioned(changes.cdc_rows, f"{folder}/cdc", partition_by=C.PARTITION)
    return replace(staged, files=change_actions(spec, staged.tier, token, by_action, tier_log, changes.touched))


def counted(staged: StagedTier, **counts: int) -> StagedTier:
    """The staged step with its result's row counts (and whether they change the tier)."""
    result = replace(staged.result, **counts)
    changed = bool(result.released or result.updated or result.removed)
    return replace(staged, result=replace(result, changed=changed))


def counted_changes(staged: StagedTier, counts: dict[tuple[str | None, str], int]) -> tuple[StagedTier, dict[str, int]]:
    """The step with its counts from the changes per (action, reason) (action None: a
    candidate whose tier row stays); and the rows per action."""
    by_action = {a: sum(n for (x, _), n in counts.items() if x == a) for a in ("insert", "update", "delete")}
    reasons: dict[str, int] = {}
    for (_, reason), n in counts.items():
        reasons[reason] = reasons.get(reason, 0) + n
    staged = counted(staged, released=by_action["insert"], updated=by_action["update"], removed=by_action["delete"],
                     expired=min(reasons.get("expired", 0), by_action["delete"]), candidates=sum(reasons.values()))
    return staged, by_action


def inserts_staged(spec: FeedSpec, staged: StagedTier, token: str, *, candidates: int, present: int) -> StagedTier:
    """A step of inserts only, its data files written: the counts and the add actions (a
    commit with only adds reads as inserts in the change feed). Nothing present: the stage
    folder is deleted, so the commit, which records the state alone, leaves no folder behind."""
    staged = counted(staged, released=present, candidates=candidates)
    if not present:
        delete_tree(stage_folder(spec, staged.tier, token))
        return staged
    added = adds(spec, staged.tier, token)
    metrics = {"numTargetRowsInserted": present, "numTargetRowsUpdated": 0, "numTargetRowsDeleted": 0,
               "numTargetFilesAdded": len(added), "numTargetFilesRemoved": 0, "numTargetChangeFilesAdded": 0}
    return replace(staged, files=FileActions(adds=tuple(added), metrics={k: str(v) for k, v in metrics.items()}))


def change_actions(spec: FeedSpec, tier: str, token: str, by_action: dict[str, int], tier_log: TableLog,
                   touched: Sequence[str]) -> FileActions:
    """The actions of a step whose new data files (and change-data files, when rows were
    updated or deleted) are written under the stage folder; ``touched``: the tier files
    rewritten, as the read named them."""
    added = adds(spec, tier, token)
    cdcs = []
    if by_action["update"] or by_action["delete"]:
        cdcs = [f.cdc_action() for f in written_files(spec.tier_path(tier), f"{STAGE_DIR}/{token}/cdc", stats=False)]
    removed = removes(tier_log, touched)
    metrics = {
        "numTargetRowsInserted": by_action["insert"], "numTargetRowsUpdated": by_action["update"],
        "numTargetRowsDeleted": by_action["delete"], "numTargetFilesAdded": len(added),
        "numTargetFilesRemoved": len(removed), "numTargetChangeFilesAdded": len(cdcs),
    }
    return FileActions(adds=tuple(added), removes=tuple(removed), cdcs=tuple(cdcs),
                       metrics={k: str(v) for k, v in metrics.items()})


def adds(spec: FeedSpec, tier: str, token: str) -> list[AddFile]:
    """Add actions for the stage's data files, with statistics from their footers."""
    return [f.add_action() for f in written_files(spec.tier_path(tier), f"{STAGE_DIR}/{token}/data", stats=True)]


def removes(tier_log: TableLog, touched: Sequence[str]) -> list[RemoveFile]:
    """Remove actions for the tier files read as ``touched`` (absolute URIs), with the
    paths, partition values and sizes the table's log has for them."""
    if not touched:
        return []
    by_path = {unquote(unquote(a.path)): a for a in tier_log.add_files()}
    out = []
    for uri in touched:
        match = by_path.get(relative(unquote(unquote(uri)), tier_log.path))
        if match is None:
            raise RuntimeError(f"{tier_log.path}: file {uri} read by Spark is not in version {tier_log.version}")
        out.append(RemoveFile(path=match.path, partition_values=match.partition_values, size=match.size))
    return out


def relative(uri: str, table: str) -> str:
    """A file's path relative to ``table`` from the absolute URI Spark names it by
    (``file:/wh/t/x``, ``s3a://b/wh/t/x``): one dictionary look-up per file, not a scan."""
    root = table.rstrip("/")
    for prefix in (root, "file:" + root, "file://" + root):
        if uri.startswith(prefix + "/"):
            return uri[len(prefix) + 1:]
    if "://" in root:  # s3a:// vs s3:// spellings of one bucket
        tail = root.split("://", 1)[1]
        _, _, rest = uri.partition("://")
        if rest.startswith(tail + "/"):
            return rest[len(tail) + 1:]
    return uri


__all__ = ["FILE_COLUMN", "adds", "change_actions", "counted", "counted_changes", "inserts_staged", "relative",
           "removes", "stage_tier"]
