"""The applied spec as data: each version of a feed's spec that took effect, in the warehouse.

``<warehouse>/<feed>/_wl_specs`` is an append-only Delta table (`EventTable`, no Spark): one
row per spec version, with its number, the hash of its release part
(`waterline.spec.release_part`), the instant it took effect, the release part itself (JSON)
and what changed. The first ingest records version 1; `waterline apply` records the next
under the feed lease. Every operation that publishes (ingest, release, stream) or tells
when it will (status, the sensor) first compares the spec file with the newest version:
one read of a small table, no JVM.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa

from waterline.engine.core import columns as C
from waterline.engine.core.state import HeldState
from waterline.engine.tables import added_columns
from waterline.engine.delta.event_table import EventTable
from waterline.engine.delta.objects import read_object
from waterline.engine.delta.table_log import TableLog, commit_path
from waterline.engine.tables import feed_tables
from waterline.engine.tables.lease import Lease, feed_lease
from waterline.errors import SpecNotApplied, WaterlineError
from waterline.semantics.spec_history import WIDENINGS
from waterline.spec import FeedSpec
from waterline.spec.release_part import SpecDiff, normal_policy, release_part, retired_by, spec_diff, spec_hash

#: What `apply_spec` calls, under the feed lease, before it records a version whose tiers'
#: schedules held lacks: ``(lease, tiers, applied)`` recomputes held's schedule columns of
#: ``tiers`` (and builds the new ones) with Spark (`waterline.engine.release.respec`).
Reschedule = Callable[[Lease, list[str], "AppliedSpec"], None]

SCHEMA = pa.schema([
    pa.field("version", pa.int64(), nullable=False),
    pa.field("hash", pa.string(), nullable=False),
    pa.field("applied_at", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("release_part", pa.string(), nullable=False),
    pa.field("changes", pa.string(), nullable=False),
])


@dataclass(frozen=True)
class AppliedSpec:
    """One recorded spec version."""

    version: int
    hash: str
    applied_us: int
    part: dict[str, Any]
    changes: str


def specs_table(spec: FeedSpec) -> EventTable:
    """The feed's table of applied spec versions."""
    return EventTable(spec.specs_path, SCHEMA,
                      description=f"waterline: the applied spec versions of feed {spec.feed}")


# Per process: a table's path -> (its log version, that commit file's bytes, every version
# recorded). `_wl_specs` only grows, so a read is still whole while its next commit file is
# absent and its last one unchanged (a table deleted and made again is read again). The
# sensor reads it every tick, a release twice (before Spark and under the lease); each such
# read is then two object reads, no table read.
_READ: dict[str, tuple[int, bytes, tuple[AppliedSpec, ...]]] = {}
_READ_LOCK = threading.Lock()


def history(spec: FeedSpec) -> tuple[AppliedSpec, ...]:
    """Every recorded spec version, oldest first (empty when none was recorded yet)."""
    path = specs_table(spec).path
    with _READ_LOCK:
        known = _READ.get(path)
    if known is not None and read_object(commit_path(path, known[0] + 1)) is None \
            and read_object(commit_path(path, known[0])) == known[1]:
        return known[2]
    log = TableLog.open(path)
    if not log.exists or log.version is None:
        return ()
    versions = tuple(sorted((_version(row) for row in log.to_arrow().to_pylist()), key=lambda a: a.version))
    last = read_object(commit_path(path, log.version))
    if last is not None:
        with _READ_LOCK:
            _READ[path] = (log.version, last, versions)
    return versions


def _version(row: dict[str, Any]) -> AppliedSpec:
    at = row["applied_at"]
    micros = int(at.timestamp()) * 1_000_000 + at.microsecond
    return AppliedSpec(row["version"], row["hash"], micros, json.loads(row["release_part"]), row["changes"])


def applied(spec: FeedSpec) -> AppliedSpec | None:
    """The newest applied spec version, or None when none was recorded yet."""
    versions = history(spec)
    return versions[-1] if versions else None


def pending_changes(spec: FeedSpec) -> tuple[AppliedSpec | None, SpecDiff]:
    """The newest applied version and what the spec file changes against it (empty: nothing)."""
    current = applied(spec)
    if current is None:
        return None, SpecDiff()
    part = release_part(spec)
    if spec_hash(part) == current.hash:
        return current, SpecDiff()
    return current, spec_diff(current.part, part)


def check_applied(spec: FeedSpec, held_log: TableLog | None = None) -> AppliedSpec | None:
    """Refuse, in one line naming the difference, a spec whose release part differs from the
    applied one (a feed with no recorded version yet passes: its first ingest records it), or
    whose tiers' schedules in held were recomputed for another policy (an apply that stopped
    before it recorded its version); the applied version (None: none recorded). ``held_log``:
    held's log as the caller already read it (else it is read)."""
    current, diff = pending_changes(spec)
    where = spec.spec_file or "SPEC"
    if diff:
        raise SpecNotApplied(f"feed {spec.feed}: the spec differs from the applied spec (version {current.version}): "
                             f"{diff.summary()}; run `waterline apply {where}` to make it take effect")
    if current is not None:
        log = held_log or TableLog.open(spec.held_path)
        stale = stale_schedules(spec, current, feed_tables.held_state(log, spec.feed), _columns(log))
        if stale:
            raise SpecNotApplied(f"feed {spec.feed}: held's schedule of tier {stale[0]} is not the applied policy's "
                                 f"(an apply did not finish); run `waterline apply {where}` again")
    return current


def check_schedules(spec: FeedSpec, held: HeldState) -> None:
    """Refuse a spec some of whose tiers held was rescheduled for under another policy (an
    ingest or stream batch that started before an apply and got the lease after it): checked
    under the lease, from held's state alone."""
    for tier, policy in spec.tiers.items():
        under = held.policies.get(tier)
        if under is not None and under != normal_policy(policy):
            raise SpecNotApplied(f"feed {spec.feed}: tier {tier}: held is scheduled for another policy than the "
                                 f"spec's (an apply took effect); restart with the applied spec")


def _columns(log: TableLog) -> set[str]:
    return {name for name, _ in log.columns()} if log.exists else set()


def stale_schedules(spec: FeedSpec, current: AppliedSpec | None, held: HeldState, columns: set[str]) -> list[str]:
    """The spec's tiers whose schedule columns in held (``columns``: held's) are missing or
    were computed under another policy than the spec's: those `apply` must recompute. A tier
    that `apply` never rescheduled has the schedule of the applied spec it was ingested under."""
    if not columns:
        return []  # nothing held: every ingest schedules with the spec it runs with
    # No version recorded (a feed older than the applied spec): held has the spec's schedule.
    applied_tiers = {t: normal_policy(p) for t, p in spec.tiers.items()} if current is None \
        else current.part.get("tiers", {})
    out = []
    for tier, policy in spec.tiers.items():
        under = held.policies.get(tier, applied_tiers.get(tier) if C.tau(tier) in columns else None)
        if under != normal_policy(policy):
            out.append(tier)
    return out


def in_force(spec: FeedSpec, held_log: TableLog | None = None) -> int | None:
    """The number of the applied spec version a release under ``spec`` is released under (read
    under the feed lease, which `apply` takes too, so no apply comes between it and the commit);
    None for a feed with no recorded version (its commits are judged by the spec of the day).
    A spec that differs from the applied one is refused as `check_applied` refuses it
    (``held_log``: held's log as the caller read it, else it is read)."""
    current = check_applied(spec, held_log)
    return None if current is None else current.version


def _record(spec: FeedSpec, version: int, now_us: int, changes: str) -> AppliedSpec:
    part = release_part(spec)
    row = {"version": version, "hash": spec_hash(part), "applied_at": now_us, "release_part": json.dumps(part),
           "changes": changes}
    specs_table(spec).append([row])
    return AppliedSpec(version, row["hash"], now_us, part, changes)


def record_first(spec: FeedSpec, now_us: int) -> AppliedSpec:
    """Record version 1 after a feed's first ingest, unless a version is recorded already
    (under the feed lease when none is: two first ingests record it once)."""
    current = applied(spec)
    if current is not None:
        return current
    with feed_lease(spec.feed_dir, feed=spec.feed):
        current = applied(spec)
        return current if current is not None else _record(spec, 1, now_us, "first ingest")


#: Why a column's type cannot change on a live feed, even where it only widens (docs/decisions.md
#: "New output columns on a live feed").
RETYPE_REFUSED = ("type widening needs Delta's typeWidening table feature, which waterline's commit writer and "
                  "the sharing server's parquet answers (reader protocol 1) do not honour; add a new column instead")


def _retype_refusal(column: str, old: str, new: str) -> str:
    if (old, new) in WIDENINGS:
        return f"column {column}: {old} -> {new}: {RETYPE_REFUSED}"
    return (f"column {column}: {old} -> {new} is no widening: published values may not fit; "
            "keep the type or add a new column")


def needs_reschedule(spec: FeedSpec) -> list[str]:
    """The tiers whose held schedule an `apply` of ``spec`` must recompute with Spark ([]:
    the apply needs no Spark)."""
    log = TableLog.open(spec.held_path)
    if not log.exists:
        return []
    return stale_schedules(spec, applied(spec), feed_tables.held_state(log, spec.feed), _columns(log))


def feed_waterline(spec: FeedSpec) -> int | None:
    """The feed's W: the greatest W_T of any tier it ever had (retired ones included, since W
    never goes back); None before any release."""
    ws = [feed_tables.tier_state(TableLog.open(spec.kept_tier_path(t))).w for t in all_tiers(spec)]
    return max((w for w in ws if w is not None), default=None)


def unbuilt_tiers(spec: FeedSpec) -> tuple[str, ...]:
    """The spec's tiers never released on a feed whose other tiers were: `apply` builds them
    at the feed's W."""
    if feed_waterline(spec) is None:
        return ()
    return tuple(t for t in spec.tiers if feed_tables.tier_state(TableLog.open(spec.tier_path(t))).w is None)


def needs_engine(spec: FeedSpec) -> bool:
    """Whether an `apply` of ``spec`` needs Spark: held's schedule of a tier to recompute, or
    a new tier to build."""
    return bool(needs_reschedule(spec) or unbuilt_tiers(spec))


def all_tiers(spec: FeedSpec) -> list[str]:
    """Every tier any applied spec version named (the retired ones included), in order of
    first appearance."""
    names: dict[str, None] = {}
    for version in history(spec):
        names.update(dict.fromkeys(version.part.get("tiers", {})))
    names.update(dict.fromkeys(spec.tiers))
    return list(names)


def retired_tiers(spec: FeedSpec) -> dict[str, int]:
    """The tiers the applied spec versions retired (name -> the version that retired it) whose
    table is still there (kept until an explicit drop)."""
    retired = retired_by((a.version, a.part) for a in history(spec))
    return {t: v for t, v in retired.items() if t not in spec.tiers and TableLog.open(spec.kept_tier_path(t)).exists}


def _add_columns(spec: FeedSpec, diff: SpecDiff) -> None:
    """Held and every tier table gain the columns the spec adds (nothing before the first
    ingest: the tables are created with them); each table only once, so a killed apply that
    is run again finishes the tables it had not reached."""
    if not diff.columns_added or not TableLog.open(spec.held_path).exists:
        return
    types = release_part(spec)["columns"]
    added_columns.add_columns(spec, {c: types[c] for c in diff.columns_added})


def apply_spec(spec: FeedSpec, now_us: int, reschedule: Reschedule | None = None) -> tuple[AppliedSpec, SpecDiff]:
    """Make the spec file's release part the applied spec, under the feed lease: the version
    recorded (the newest one unchanged when nothing differs) and what changed.

    Held's schedule is recomputed first (``reschedule``, given the tiers `stale_schedules`
    names), then the version is recorded: a run killed between the two left held's state
    naming the policies its schedule is for, which every publishing operation compares with
    the spec (`check_applied`), so none runs on a half-applied change, and a re-run of the
    apply (with either spec file) recomputes what differs and records the version."""
    with feed_lease(spec.feed_dir, feed=spec.feed) as lease:
        current, diff = pending_changes(spec)
        refused = list(diff.refused)
        if TableLog.open(spec.held_path).exists:  # before any data a type may change: nothing holds it yet
            refused += [_retype_refusal(c, a, b) for c, a, b in diff.columns_retyped]
        if refused:
            raise WaterlineError(f"feed {spec.feed}: apply refused: {refused[0]}")
        _add_columns(spec, diff)  # before held is rescheduled and the version recorded: both find them
        log = TableLog.open(spec.held_path)
        stale = stale_schedules(spec, current, feed_tables.held_state(log, spec.feed), _columns(log))
        if reschedule is not None and log.exists:
            reschedule(lease, stale, current)
            lease.check()
        elif stale:
            raise WaterlineError(f"feed {spec.feed}: apply: tier {stale[0]} needs held rescheduled: "
                                 "run it with Spark (`waterline apply`, `Feed.apply()`)")
        if current is None:
            return _record(spec, 1, now_us, "first apply"), diff
        if not diff:
            return current, diff
        return _record(spec, current.version + 1, now_us, diff.summary()), diff


__all__ = ["AppliedSpec", "Reschedule", "SCHEMA", "SpecDiff", "all_tiers", "applied", "apply_spec", "check_applied",
           "check_schedules", "feed_waterline", "history", "in_force", "needs_engine", "needs_reschedule",
           "pending_changes", "record_first", "retired_tiers", "specs_table", "stale_schedules", "unbuilt_tiers"]
