"""Results of engine operations: frozen, JSON-ready, used by the CLI, Dagster metadata and Airflow asset events."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from waterline.clock import format_instant
from waterline.policy import ReleasePlan, describe_plan, plan_to_json


#: What a release proof concludes, for a tier (`TierProof.verdict`) or a feed (`feed_verdict`).
Verdict = Literal["clean", "BREACH", "not proven", "no table"]


class _Result:
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]


@dataclass(frozen=True)
class IngestResult(_Result):
    feed: str
    partition: str
    seq: int | None  # None when the ingest appended nothing
    rows_read: int
    versions_written: int
    inserted: int
    updated: int
    removed: int
    unchanged: int
    quarantined: int
    late_dropped: int
    event_waterline_us: int | None
    next_due_us: int | None

    def summary(self) -> str:
        """One log line: ``feed/partition: read n rows, wrote n versions (...)``."""
        return (f"{self.feed}/{self.partition}: read {self.rows_read} rows, wrote {self.versions_written} versions "
                f"({self.inserted} new, {self.updated} changed, {self.removed} removed), {self.unchanged} unchanged, "
                f"{self.quarantined} quarantined")


@dataclass(frozen=True)
class TierRelease(_Result):
    tier: str
    w_us: int | None  # W_T after the release; None for a tier on hold that was never released
    previous_w_us: int | None
    seq: int
    released: int = 0
    updated: int = 0
    removed: int = 0
    expired: int = 0
    candidates: int = 0
    next_due_us: int | None = None
    held: bool = False  # True when the tier is on hold and was skipped
    changed: bool = False

    def summary(self, feed: str) -> str:
        """One log line: ``feed/tier: W_T ... (was ...); released n, updated n, removed n, expired n``."""
        def at(us: int | None) -> str:
            return "none" if us is None else format_instant(us)

        return (f"{feed}/{self.tier}: W_T {at(self.w_us)} (was {at(self.previous_w_us)}); released {self.released}, "
                f"updated {self.updated}, removed {self.removed}, expired {self.expired}"
                + (" (on hold)" if self.held else ""))


@dataclass(frozen=True)
class ReleaseResult(_Result):
    feed: str
    requested_us: int | None
    w_us: int
    seq: int
    tiers: dict[str, TierRelease] = field(default_factory=dict)
    # A release that waited for a due moment (``wait_until_due``): the moment, and whether
    # the clock reached it before the wait ran out (else it released up to the clock).
    waited_for_us: int | None = None
    reached: bool | None = None


@dataclass(frozen=True)
class GcResult(_Result):
    feed: str
    versions_before: int
    versions_removed: int
    files_compacted: bool
    staged_files_removed: int = 0  # files of pre-staged releases that never committed


@dataclass(frozen=True)
class TableSummary(_Result):
    """One of a feed's tables as its log describes it (no data read)."""

    path: str
    exists: bool
    columns: tuple[tuple[str, str], ...] = ()  # (name, Delta type)
    row_count: int | None = None  # from file statistics; None without a table or statistics


@dataclass(frozen=True)
class TableMaintenance(_Result):
    """What `waterline maintain` did to one table (a tier, or ``held``)."""

    table: str
    files_before: int  # data files the table's snapshot named before
    files_after: int
    files_compacted: int = 0  # small files OPTIMIZE rewrote (dataChange false: no change-feed rows)
    files_vacuumed: int = 0  # unreferenced files past the retention, deleted
    staged_files_removed: int = 0  # files of stages that never committed
    log_files_removed: int = 0  # commit and checkpoint files past the log retention
    checkpoint_version: int | None = None
    commits_proven: int = 0  # release proofs kept before vacuum (tiers)

    def summary(self, feed: str) -> str:
        return (f"{feed}/{self.table}: " + (f"{self.commits_proven} commits proven and kept, "
                                              if self.commits_proven else "")
                + f"{self.files_before} -> {self.files_after} files "
                f"({self.files_compacted} compacted), {self.files_vacuumed} vacuumed, "
                f"{self.log_files_removed} log files and {self.staged_files_removed} staged files removed"
                + (f", checkpoint at {self.checkpoint_version}" if self.checkpoint_version is not None else ""))


@dataclass(frozen=True)
class MaintainResult(_Result):
    """`waterline maintain`: each table's maintenance, and the vacuum retention it kept."""

    feed: str
    retention_us: int
    tables: dict[str, TableMaintenance] = field(default_factory=dict)


def combine_releases(results: list[ReleaseResult]) -> ReleaseResult:
    """Consecutive releases of one feed as one: the last W and state, counts summed per tier.
    A tier only some of them released (a stream releases its due-at-once tiers first) is
    reported as its last release left it."""
    last = results[-1]
    tiers: dict[str, TierRelease] = {}
    names = dict.fromkeys(name for r in results for name in r.tiers)
    for name in names:
        steps = [r.tiers[name] for r in results if name in r.tiers]
        final = steps[-1]
        tiers[name] = replace(
            final,
            previous_w_us=steps[0].previous_w_us,
            released=sum(t.released for t in steps), updated=sum(t.updated for t in steps),
            removed=sum(t.removed for t in steps), expired=sum(t.expired for t in steps),
            candidates=sum(t.candidates for t in steps), changed=any(t.changed for t in steps),
        )
    return replace(last, requested_us=results[0].requested_us, w_us=max(r.w_us for r in results), tiers=tiers)


@dataclass(frozen=True)
class FeedPlan:
    """Each tier's policy and compiled release plan, and how far the policies' columns were checked."""

    feed: str
    policies: dict[str, str]
    plans: dict[str, ReleasePlan]
    checked: str  # one line: what the columns were checked against, or why they were not
    columns_checked: bool
    changes: tuple[str, ...] = ()  # the spec file against the applied spec, one line each (none: applied)
    applied: bool = True  # False: no spec applied yet: the first ingest (or apply) applies the file's
    counts: dict[str, Any] | None = None  # the changes' consequences counted (`ChangeCounts.to_dict`)

    def to_dict(self) -> dict[str, Any]:
        """The plans as `waterline plan --json` prints them (tier -> branches), and under
        ``_wl_changes`` (no tier name starts with _wl) what is not applied yet, counted."""
        out: dict[str, Any] = {name: plan_to_json(plan) for name, plan in self.plans.items()}
        if self.changes:
            out["_wl_changes"] = {"lines": list(self.changes), "counts": self.counts}
        return out

    def describe(self) -> str:
        """The plans as `waterline plan` prints them."""
        lines = []
        for name, plan in self.plans.items():
            lines.append(f"tier {name}: {self.policies[name]}")
            lines += ["  " + line for line in describe_plan(plan).splitlines()]
        lines.append(self.checked)
        if not self.applied:
            lines.append("no spec applied yet: the feed's first ingest (or `waterline apply`) applies this one; "
                         "nothing to count")
        if self.changes:  # `waterline apply` makes them take effect
            lines.append("not applied yet (waterline apply):")
            lines += ["  " + change for change in self.changes]
            if self.counts and self.counts.get("note"):
                lines.append(f"  ({self.counts['note']})")
        return "\n".join(lines)


@dataclass(frozen=True)
class TierAudit(_Result):
    """A tier table checked against the invariants at the version carrying its W_T."""

    tier: str
    exists: bool
    now_us: int  # the trusted clock when checked
    w_us: int | None = None
    version: int | None = None
    rows: int = 0
    violations: int = 0  # rows not visible at W_T under the tier's policy (released early)
    duplicates: int = 0  # identities present more than once
    early_sample: tuple[tuple, ...] = ()
    duplicate_sample: tuple[tuple, ...] = ()

    @property
    def w_ahead_of_clock(self) -> bool:
        return self.w_us is not None and self.w_us > self.now_us

    @property
    def embargo_safe(self) -> bool:
        return self.violations == 0 and not self.w_ahead_of_clock


@dataclass(frozen=True)
class WaterlineHistory(_Result):
    """W_T over a tier table's retained waterline commits, and where it went back (never, if sound)."""

    tier: str
    commits: tuple[tuple[int, int], ...]  # (table version, W_T), oldest first
    regressions: tuple[tuple[int, int, int, int], ...]  # (from version, from W_T, to version, to W_T)

    @property
    def monotonic(self) -> bool:
        return not self.regressions



@dataclass(frozen=True)
class ReleaseProof(_Result):
    """One commit of a tier, proven: by when it had committed, at what W_T, what it changed, and
    how long after its rows became due (``min_margin_us``: the least over its inserts and
    updates; None when it released no row with a finite due instant)."""

    version: int
    committed_us: int  # the commit had happened before this instant (store and writer witnesses)
    writer_us: int  # the writer's commitInfo.timestamp
    store_us: int | None  # the object store's time of the commit file
    w_us: int | None  # W_T the commit records (for another writer's commit: the newest before it)
    seq: int | None
    operation: str
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    min_margin_us: int | None = None
    breaches: int = 0
    spec: int | None = None  # the applied spec version it was judged by (None: the spec of the day)

    def evolve(self, **changes: Any) -> ReleaseProof:
        return replace(self, **changes)


@dataclass(frozen=True)
class Breach(_Result):
    """A row a commit released before it was due: ``due_us`` None means its policy shows it at
    no waterline from W_T on (it should never have been there)."""

    tier: str
    version: int
    key: tuple  # (partition, key columns...)
    seq: int
    change: str  # insert | update
    due_us: int | None
    committed_us: int
    w_us: int | None


@dataclass(frozen=True)
class TierProof(_Result):
    """The release proof of one tier over a range of its commits.

    ``unproven``: ``(first version, last version, why)`` of commits the proof could not see
    (cleaned from the log, written before the change data feed); never counted as clean.
    ``rows`` (on request): ``(version, change, key, seq, due_us)`` of every change (insert,
    update, delete; ``rewrite``: an update that keeps the version the tier showed, not judged),
    where a deleted row's due instant is when it had to go (NEG_INF: at once)."""

    tier: str
    exists: bool
    releases: tuple[ReleaseProof, ...] = ()
    breaches: tuple[Breach, ...] = ()
    unproven: tuple[tuple[int, int, str], ...] = ()
    rows: tuple[tuple, ...] = ()

    @property
    def breach_count(self) -> int:
        """Rows released before they were due, over every commit (``breaches`` lists the first ones)."""
        return sum(r.breaches for r in self.releases)

    @property
    def clean(self) -> bool:
        """No breach and nothing the proof could not see."""
        return self.breach_count == 0 and not self.unproven

    @property
    def least_margin_us(self) -> int | None:
        """The least margin (commit minus due instant) over the commits' released rows: below zero
        is a breach. None when no commit released a row with a finite due instant."""
        return min((r.min_margin_us for r in self.releases if r.min_margin_us is not None), default=None)

    @property
    def rows_released(self) -> int:
        """Rows the commits inserted or updated."""
        return sum(r.inserted + r.updated for r in self.releases)

    @property
    def rows_deleted(self) -> int:
        """Rows the commits deleted (expiry and removals)."""
        return sum(r.deleted for r in self.releases)

    @property
    def verdict(self) -> Verdict:
        """``no table`` (the tier has no table yet), ``clean``, ``BREACH`` (a row released before
        it was due) or ``not proven`` (no breach, but commits the proof could not see)."""
        if not self.exists:
            return "no table"
        return "clean" if self.clean else "BREACH" if self.breach_count else "not proven"


def feed_verdict(proofs: Iterable[TierProof]) -> Verdict:
    """The verdict over a feed's tier proofs: ``clean`` when every one is `TierProof.clean`
    (a tier with no table yet has nothing to prove), else ``BREACH`` when any has a breach,
    else ``not proven``."""
    proofs = list(proofs)
    if all(p.clean for p in proofs):
        return "clean"
    return "BREACH" if any(p.breach_count for p in proofs) else "not proven"


@dataclass(frozen=True)
class StreamBatchResult(_Result):
    """One micro-batch of a stream source: what it appended to held (``skipped``: a replay of
    a batch the held table already has, which appended nothing)."""

    feed: str
    source: str
    batch_id: int
    skipped: bool
    seq: int | None  # None when the batch appended nothing
    records: int = 0
    versions_written: int = 0
    inserted: int = 0
    updated: int = 0
    removed: int = 0
    quarantined: int = 0
    event_waterline_us: int | None = None
    next_due_us: int | None = None
    #: per tier, the earliest moment one of the batch's versions is due there (tiers without any omitted)
    due_by_tier: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        """One log line: ``feed/source batch n: read n records, wrote n versions (...)``."""
        head = f"{self.feed}/{self.source} batch {self.batch_id}"
        if self.skipped:
            return f"{head}: already in held (a replay), skipped"
        return (f"{head}: read {self.records} records, wrote {self.versions_written} versions ({self.inserted} new, "
                f"{self.updated} changed, {self.removed} removed), {self.quarantined} quarantined")
