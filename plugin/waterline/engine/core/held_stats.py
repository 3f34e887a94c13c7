"""What the held table's Delta file statistics say about a release, without reading rows.

Every held file carries min/max statistics of `_wl_seq`, `_wl_tau__T` and
`_wl_last__T` in the Delta log. From those alone a release can tell, per tier
moving from (low, s0) to (w, seq):

* which partitions may hold candidates at all (`candidate_partitions`);
* for most files, what they add to the tier's outlook (versions still pending
  and the next instant something changes): a file whose every version takes
  over after W contributes all its rows as pending and its min(tau) as the next
  boundary; a file whose every boundary is at or before W contributes nothing.
  Only partitions holding a file that is neither (`Outlook.open_partitions`)
  need a Spark read, so a tick never reads the pending backlog.

Missing statistics (a file written without them) count as "could be anything":
the file's partition is read. Everything here is plain Python over numbers the
log reader (`waterline.engine.delta.table_log.TableLog.held_files`) extracts, so
it is also cheap to test exhaustively.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class HeldFile:
    """One held data file as the Delta log describes it; None means "no statistic"."""

    partition: str
    records: int | None
    seq_min: int | None
    seq_max: int | None
    tau_min: dict[str, int | None]
    tau_max: dict[str, int | None]
    last_max: dict[str, int | None]


@dataclass(frozen=True)
class Outlook:
    """A tier's outlook at W from statistics: what is known, and which partitions to read."""

    open_partitions: frozenset[str]
    pending: int  # versions with takeover > W in files outside open_partitions
    next_due: int | None  # min takeover among those versions


def _le(value: int | None, bound: int) -> bool:
    """value <= bound, where a missing statistic never proves it."""
    return value is not None and value <= bound


def _gt(value: int | None, bound: int) -> bool:
    return value is not None and value > bound


def candidate_partitions(files: Sequence[HeldFile], tier: str, *, low: int, s0: int, w: int) -> list[str]:
    """Partitions that may hold a version due by `w` and either new since `s0` or with a
    boundary in (low, w]: a superset of the exact candidates, which the release computes."""
    out = set()
    for f in files:
        if _gt(f.tau_min[tier], w):
            continue  # nothing in the file is due yet
        new = not _le(f.seq_max, s0)
        crosses = not _le(f.last_max[tier], low)
        if new or crosses:
            out.add(f.partition)
    return sorted(out)


def outlook(files: Sequence[HeldFile], tier: str, *, w: int, seq: int) -> Outlook:
    """Pending versions and next boundary after `w` from the files statistics settle."""
    pending_files: list[HeldFile] = []
    open_partitions: set[str] = set()
    for f in files:
        if _gt(f.seq_min, seq):
            continue  # written after the release's ingest sequence: not part of this release
        if f.records is not None and _le(f.seq_max, seq) and _gt(f.tau_min[tier], w):
            pending_files.append(f)  # every version takes over after w
        elif _le(f.tau_max[tier], w) and _le(f.last_max[tier], w):
            continue  # every boundary is behind w: the file can never matter again
        else:
            open_partitions.add(f.partition)
    settled = [f for f in pending_files if f.partition not in open_partitions]
    return Outlook(
        open_partitions=frozenset(open_partitions),
        pending=sum(f.records or 0 for f in settled),
        next_due=min((f.tau_min[tier] for f in settled), default=None),
    )



def single_ingest_partitions(files: Sequence[HeldFile]) -> set[str]:
    """Partitions whose every file holds versions of one and the same ingest.

    An ingest writes at most one version per identity, so in these partitions
    each identity has a single version: it governs as soon as it is due, and a
    release needs no grouping to find it.
    """
    seqs: dict[str, set] = {}
    for f in files:
        exact = f.seq_min is not None and f.seq_min == f.seq_max
        seqs.setdefault(f.partition, set()).add(f.seq_min if exact else None)
    return {p for p, s in seqs.items() if len(s) == 1 and None not in s}
