"""What the held table's Delta file statistics say about a release, without reading rows.

Every held file carries min/max statistics of `_wl_seq`, `_wl_tau__T` and
`_wl_last__T` in the Delta log. From those alone a release can tell, per tier
moving from (low, s0) to (w, seq):

* which partitions may hold candidates at all, and the least seq a candidate can have
  (`candidate_scope`);
* for most files, what they add to the tier's outlook (versions still pending
  and the next instant something changes): a file whose every version takes
  over after W contributes all its rows as pending and its min(tau) as the next
  boundary; a file whose every boundary is at or before W contributes nothing.
  Only partitions holding a file that is neither (`Outlook.open_partitions`)
  need a Spark read, so a tick never reads the pending backlog.

Missing statistics (a file written without them) count as "could be anything":
the file's partition is read. Everything here is plain Python over numbers the
log reader (`waterline.engine.tables.feed_tables.held_files`) extracts, so
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
    path: str = ""  # as the log names it (relative to the table, URL-encoded)


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


@dataclass(frozen=True)
class CandidateScope:
    """Where a tier step's candidates can be, from statistics alone.

    ``partitions``: those that may hold a candidate. ``seq_floor``: no candidate's ingest
    sequence is below it (None: a statistic is missing, nothing is known). A candidate is
    due at W, so its key's governing version (the due version with the greatest seq) has a
    seq at or above the candidate's: versions below the floor can neither make a key a
    candidate nor govern one, and a release need not read them (their files are skipped
    by their seq statistics). A stream's tier that releases every batch reads the batch's
    files, not the feed's history.
    """

    partitions: tuple[str, ...]
    seq_floor: int | None


def _may_hold_candidates(f: HeldFile, tier: str, *, low: int, s0: int, w: int) -> bool:
    if _gt(f.tau_min[tier], w):
        return False  # nothing in the file is due yet
    new = not _le(f.seq_max, s0)
    crosses = not _le(f.last_max[tier], low)
    return new or crosses


def candidate_scope(files: Sequence[HeldFile], tier: str, *, low: int, s0: int, w: int) -> CandidateScope:
    """The partitions and least seq of the versions due by `w` and either new since `s0` or
    with a boundary in (low, w]: a superset of the exact candidates, which the release computes."""
    holding = [f for f in files if _may_hold_candidates(f, tier, low=low, s0=s0, w=w)]
    floors = [f.seq_min for f in holding]
    floor = None if not floors or None in floors else min(floors)
    return CandidateScope(partitions=tuple(sorted({f.partition for f in holding})), seq_floor=floor)


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


@dataclass(frozen=True)
class StepFiles:
    """The held files one tier step must read when it reads files rather than partitions
    (`step_files`), and what statistics settle without reading."""

    files: tuple[HeldFile, ...]
    rows: int | None  # in ``files`` (None: a file without a row count)
    pending: int  # versions with takeover > W in settled files
    next_due: int | None  # min takeover among them


def step_files(files: Sequence[HeldFile], tier: str, *, w: int, seq: int, scope: CandidateScope) -> StepFiles:
    """File by file, what a tier step at (w, seq) reads: every file that may hold a due
    version at or above ``scope``'s seq floor in its partitions (`desired_rows`' input) or
    a visibility boundary after W (the outlook's). A file whose every version takes over
    after W is settled by its statistics, as `outlook` settles whole partitions: its rows
    are pending, its min(tau) the next boundary. Reading these files instead of whole
    partitions gives the same candidates, governing versions and outlook: a row in a
    skipped file passes neither read's filter."""
    scoped = set(scope.partitions)
    floor = scope.seq_floor
    read: list[HeldFile] = []
    pending, nexts = 0, []
    for f in files:
        if _gt(f.seq_min, seq):
            continue
        if f.records is not None and _le(f.seq_max, seq) and _gt(f.tau_min[tier], w):
            pending += f.records
            nexts.append(f.tau_min[tier])
            continue
        due = f.partition in scoped and not _gt(f.tau_min[tier], w) and not (
            floor is not None and f.seq_max is not None and f.seq_max < floor)
        behind = _le(f.tau_max[tier], w) and _le(f.last_max[tier], w)
        if due or not behind:
            read.append(f)
    counts = [f.records for f in read]
    return StepFiles(files=tuple(read), rows=None if None in counts else sum(counts),
                     pending=pending, next_due=min(nexts, default=None))
