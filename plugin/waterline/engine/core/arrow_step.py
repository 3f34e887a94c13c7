"""One tier step of a small release computed over Arrow rows on the driver: no Spark job.

The same rules as the Spark plan (`waterline.engine.spark.planning.desired_rows`,
`tier_outlook` and the change join of `waterline.engine.spark.staging`), for a step whose
held rows and tier rows the driver already read (`waterline.engine.delta.arrow_files`):

* `desired_rows`: per identity with a candidate version (DESIGN.md rule 3, as
  `TierStep.candidate_filter` defines a candidate), the governing version at W (the due
  version with the greatest seq) and the tier row it makes: present or not, its visibility
  interval at W, and why (present, removed, expired, between);
* `step_outlook`: the next boundary after W and the versions still pending, among the rows
  read (the statistics settle the rest);
* `tier_changes`: the desired rows against the tier's rows: what is inserted, updated and
  deleted, the tier files rewritten, the new files' rows and the change-data rows.

Why not the Spark plan over a local relation: at a stream's rate every release paid four
Spark jobs per tier (outlook, change count, data and change-data writes), ~0.3 s each on
two cores, for a few thousand rows. The rules here are the plan's, row by row, in plain
Python over the few columns they read; payload columns are only taken, never converted.
The release differential test draws per release whether Spark or this module computes a
step, and compares both with `waterline.semantics`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from waterline.engine.core import columns as C
from waterline.engine.core.arrow_keys import matching_rows
from waterline.semantics import POS_INF

#: Columns `desired_rows` adds to the identity and payload columns it takes from held.
PRESENT = "_wl_present"
REASON = "_wl_reason"
#: `tier_changes`' change-data column, as Delta's change data feed names it.
CHANGE_TYPE = "_change_type"


@dataclass(frozen=True)
class StepBounds:
    """A tier step's numbers: the tier moves from (``low``, ``s0``) to (``w``, its seq);
    ``low`` is the old W with "never released" as NEG_INF."""

    tier: str
    low: int
    s0: int
    w: int


@dataclass(frozen=True)
class TierChanges:
    """What a step changes in a tier: counts per (action, reason) (action None: the tier row
    stays), the tier files rewritten (as the read named them), and the rows of the new data
    files (the rewritten files' untouched rows, updated and inserted rows) and of the
    change-data files (None when nothing is updated or deleted)."""

    counts: dict[tuple[str | None, str], int]
    touched: list[str]
    new_rows: pa.Table
    cdc_rows: pa.Table | None


def desired_rows(held: pa.Table, bounds: StepBounds, keys: Sequence[str], *, partitions: Sequence[str],
                 seq_floor: int | None) -> pa.Table:
    """The tier rows the step's candidates must have at W: the identity columns ``keys``
    (the partition first), held's payload, `_wl_seq`, `_wl_start`, `_wl_end` (NULL unless
    present), `PRESENT` and `REASON`. ``held``: the held rows read (at most the release's
    seq); ``partitions``/``seq_floor``: the step's `CandidateScope`."""
    tier, w = bounds.tier, bounds.w
    mask = pc.and_(pc.less_equal(held.column(C.tau(tier)), w),
                   pc.is_in(held.column(C.PARTITION), pa.array(list(partitions), pa.string())))
    if seq_floor is not None:
        mask = pc.and_(mask, pc.greater_equal(held.column(C.SEQ), seq_floor))
    due = held.filter(mask)
    seqs, taus, lasts = (due.column(c).to_pylist() for c in (C.SEQ, C.tau(tier), C.last(tier)))
    vises = due.column(C.vis(tier)).to_pylist()
    best: dict[tuple, tuple[int, int]] = {}
    candidates: set[tuple] = set()
    for i, key in enumerate(identities(due, keys)):
        if key not in candidates and _candidate(bounds, seqs[i], taus[i], lasts[i], vises[i]):
            candidates.add(key)
        if key not in best or seqs[i] > best[key][0]:
            best[key] = (seqs[i], i)
    governing = due.take(pa.array(sorted(i for key, (_, i) in best.items() if key in candidates), pa.int64()))
    starts, ends, present, reasons = [], [], [], []
    for removed, tau, last, vis in zip(*(governing.column(c).to_pylist()
                                         for c in (C.REMOVED, C.tau(tier), C.last(tier), C.vis(tier)))):
        intervals = _intervals(tau, last, vis)
        now = next((i for i in intervals if i["start"] <= w < i["end"]), None)
        starts.append(now and now["start"])
        ends.append(now and now["end"])
        present.append(not removed and now is not None)
        reasons.append("present" if present[-1] else "removed" if removed or not intervals
                       else "expired" if intervals[-1]["end"] <= w else "between")
    payload = [c for c in governing.column_names if not C.is_system(c) and c not in keys]
    out = governing.select([*keys, *payload, C.SEQ])
    for name, values, kind in ((C.START, starts, pa.int64()), (C.END, ends, pa.int64()),
                               (PRESENT, present, pa.bool_()), (REASON, reasons, pa.string())):
        out = out.append_column(name, pa.array(values, kind))
    return out


def step_outlook(held: pa.Table, tier: str, w: int, *, pending: int, next_due: int | None) -> tuple[int | None, int]:
    """The tier's next due instant after W and its pending versions: those of ``held`` (the
    rows read) with a boundary after W, plus ``pending`` and ``next_due`` that statistics
    settled for the files not read."""
    nexts = [] if next_due is None else [next_due]
    columns = (held.column(c).to_pylist() for c in (C.tau(tier), C.last(tier), C.vis(tier)))
    for tau, last, vis in zip(*columns):
        if last is None or last <= w:
            continue
        nexts.append(min((_boundary_after(i, w) for i in _intervals(tau, last, vis)), default=POS_INF))
        pending += tau is not None and tau > w
    found = [x for x in nexts if x < POS_INF]
    return (min(found) if found else None), pending


def tier_changes(desired: pa.Table, old: pa.Table, keys: Sequence[str], schema: pa.Schema, *,
                 file_column: str) -> TierChanges:
    """``desired`` (`desired_rows`) against ``old``, the tier's rows of the step's partitions
    with each row's file in ``file_column``; ``schema``: the tier's columns, as the new data
    files hold them."""
    # Only the tier rows of the step's identities are compared (an Acero semi join): a
    # stream's tier partition holds every key of the day, its step a few thousand.
    near = matching_rows(old, desired, keys)
    compared, number = old.take(near), near.to_pylist()  # number: a compared row's row in ``old``
    index = {key: i for i, key in enumerate(identities(compared, keys))}
    old_seq, old_start, old_end = (compared.column(c).to_pylist() for c in (C.SEQ, C.START, C.END))
    old_files = compared.column(file_column).to_pylist()
    new_seq, new_start, new_end = (desired.column(c).to_pylist() for c in (C.SEQ, C.START, C.END))
    present, reasons = desired.column(PRESENT).to_pylist(), desired.column(REASON).to_pylist()
    counts: dict[tuple[str | None, str], int] = {}
    inserted, updated, deleted = [], [], []  # desired rows, (desired, compared) pairs, compared rows
    for j, key in enumerate(identities(desired, keys)):
        t = index.get(key)
        if t is None:
            action = "insert" if present[j] else None
        elif not present[j]:
            action = "delete"
        elif (old_seq[t], old_start[t], old_end[t]) != (new_seq[j], new_start[j], new_end[j]):
            action = "update"
        else:
            action = None
        counts[(action, reasons[j])] = counts.get((action, reasons[j]), 0) + 1
        if action == "insert":
            inserted.append(j)
        elif action == "update":
            updated.append((j, t))
        elif action == "delete":
            deleted.append(t)
    touched = sorted({old_files[t] for _, t in updated} | {old_files[t] for t in deleted})
    rewritten = {number[t] for _, t in updated} | {number[t] for t in deleted}
    stays = np.ones(old.num_rows, dtype=bool)
    stays[list(rewritten)] = False
    in_touched = pc.is_in(old.column(file_column), value_set=pa.array(touched, pa.string()))
    kept = pc.indices_nonzero(pc.and_(in_touched, pa.array(stays)))
    new_values = _rows(desired, [j for j, _ in updated] + inserted, schema)
    new_rows = pa.concat_tables([_rows(old, kept, schema), new_values])
    cdc = None
    if updated or deleted:
        pre = _rows(old, [number[t] for _, t in updated] + [number[t] for t in deleted], schema)
        kinds = ["update_preimage"] * len(updated) + ["delete"] * len(deleted)
        post_kinds = ["update_postimage"] * len(updated) + ["insert"] * len(inserted)
        cdc = pa.concat_tables([pre.append_column(CHANGE_TYPE, pa.array(kinds, pa.string())),
                                new_values.append_column(CHANGE_TYPE, pa.array(post_kinds, pa.string()))])
    return TierChanges(counts=counts, touched=touched, new_rows=new_rows, cdc_rows=cdc)


def identities(rows: pa.Table, keys: Sequence[str]) -> list[tuple]:
    """Each row's values of ``keys`` as a tuple that is equal where SQL's grouping is (NaN
    equals NaN there, not in Python)."""
    columns = []
    for k in keys:
        column = rows.column(k)
        values = column.to_pylist()
        # only a floating column holds NaN: the others are taken as they come (most keys)
        columns.append([_comparable(v) for v in values] if pa.types.is_floating(column.type) else values)
    return list(zip(*columns)) if columns else [()] * rows.num_rows


def _comparable(value: Any) -> Any:
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


def _rows(table: pa.Table, indices: list[int] | pa.Array, schema: pa.Schema) -> pa.Table:
    numbers = indices.cast(pa.int64()) if isinstance(indices, pa.Array) else pa.array(indices, pa.int64())
    return table.take(numbers).select(schema.names).cast(schema)


def _intervals(tau: int, last: int, vis: list[dict] | None) -> list[dict]:
    """A version's visibility intervals: NULL is stored for the single interval [tau, end),
    end being `last` unless last = tau, which stands for an open end
    (`waterline.engine.spark.schedule.stored_vis_sql`)."""
    if vis is not None:
        return vis
    return [{"start": tau, "end": POS_INF if last == tau else last}]


def _candidate(bounds: StepBounds, seq: int, tau: int, last: int | None, vis: list[dict] | None) -> bool:
    """`TierStep.candidate_filter` of a due version: ingested since S0, or a boundary in (low, W]."""
    low, w = bounds.low, bounds.w
    if seq > bounds.s0:
        return True
    if last is None or last <= low:
        return False
    return any(low < i["start"] <= w or low < i["end"] <= w for i in _intervals(tau, last, vis))


def _boundary_after(interval: dict, w: int) -> int:
    if interval["start"] > w:
        return interval["start"]
    if w < interval["end"] < POS_INF:
        return interval["end"]
    return POS_INF


__all__ = ["CHANGE_TYPE", "PRESENT", "REASON", "StepBounds", "TierChanges", "desired_rows", "identities",
           "step_outlook", "tier_changes"]
