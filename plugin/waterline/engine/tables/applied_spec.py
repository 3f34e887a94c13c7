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
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from waterline.engine.delta import storage
from waterline.engine.delta.event_table import EventTable
from waterline.engine.delta.table_log import TableLog
from waterline.engine.tables.lease import feed_lease
from waterline.errors import SpecNotApplied, WaterlineError
from waterline.spec import FeedSpec
from waterline.spec.release_part import SpecDiff, release_part, spec_diff, spec_hash

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
    return EventTable(storage.join(spec.feed_dir, "_wl_specs"), SCHEMA,
                      description=f"waterline: the applied spec versions of feed {spec.feed}")


def applied(spec: FeedSpec) -> AppliedSpec | None:
    """The newest applied spec version, or None when none was recorded yet."""
    table = specs_table(spec)
    if not TableLog.open(table.path).exists:
        return None
    rows = table.read().to_pylist()
    if not rows:
        return None
    row = max(rows, key=lambda r: r["version"])
    at = row["applied_at"]
    micros = int(at.timestamp()) * 1_000_000 + at.microsecond
    return AppliedSpec(row["version"], row["hash"], micros, json.loads(row["release_part"]), row["changes"])


def pending_changes(spec: FeedSpec) -> tuple[AppliedSpec | None, SpecDiff]:
    """The newest applied version and what the spec file changes against it (empty: nothing)."""
    current = applied(spec)
    if current is None:
        return None, SpecDiff()
    part = release_part(spec)
    if spec_hash(part) == current.hash:
        return current, SpecDiff()
    return current, spec_diff(current.part, part)


def check_applied(spec: FeedSpec) -> None:
    """Refuse, in one line naming the difference, a spec whose release part differs from the
    applied one (a feed with no recorded version yet passes: its first ingest records it)."""
    current, diff = pending_changes(spec)
    if diff:
        where = spec.spec_file or "SPEC"
        raise SpecNotApplied(f"feed {spec.feed}: the spec differs from the applied spec (version {current.version}): "
                             f"{diff.summary()}; run `waterline apply {where}` to make it take effect")


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


def unsupported(spec: FeedSpec, diff: SpecDiff) -> list[str]:
    """Changes the engine cannot honour yet (issue 56: tier creation at apply, rescheduling of
    held versions, column addition), each as a line."""
    if not TableLog.open(spec.held_path).exists:
        return []  # nothing held or published yet: every change takes effect as a fresh spec
    out = [f"tier {t} added after data was ingested" for t in diff.tiers_added]
    out += [f"tier {t}: policy changed after data was ingested" for t, _, _ in diff.policies_changed]
    out += [f"column {c} added after data was ingested" for c in diff.columns_added]
    out += [f"column {c} retyped after data was ingested" for c, _, _ in diff.columns_retyped]
    return out


def apply_spec(spec: FeedSpec, now_us: int) -> tuple[AppliedSpec, SpecDiff]:
    """Make the spec file's release part the applied spec, under the feed lease: the version
    recorded (the newest one unchanged when nothing differs) and what changed."""
    with feed_lease(spec.feed_dir, feed=spec.feed):
        current, diff = pending_changes(spec)
        if current is None:
            return _record(spec, 1, now_us, "first apply"), diff
        if not diff:
            return current, diff
        if diff.refused:
            raise WaterlineError(f"feed {spec.feed}: apply refused: {diff.refused[0]}")
        later = unsupported(spec, diff)
        if later:
            raise WaterlineError(f"feed {spec.feed}: apply: {later[0]}: not supported by the engine yet "
                                 "(retiring a tier or changing the waterline or time zone is)")
        return _record(spec, current.version + 1, now_us, diff.summary()), diff


__all__ = ["AppliedSpec", "SCHEMA", "SpecDiff", "applied", "apply_spec", "check_applied", "pending_changes", "record_first",
           "specs_table", "unsupported"]
