"""Audit a tier's Delta history for timeliness: when each row became readable vs when it was due.

JVM-free (the ``deltalake`` package). For each waterline commit of the tier
table, the rows it added (identities not in the previous version) are paired
with the commit's timestamp and W_T, so a caller that knows each row's due
instant can count early rows (readable before due) and measure lateness.
Used by the pre-armed release test and by ``bench/latency.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from waterline.engine.delta.table_log import TableLog, parse_state
from waterline.spec import FeedSpec


@dataclass(frozen=True)
class Appearance:
    """A row identity that became readable in ``version`` of a tier table."""

    version: int
    commit_us: int  # the Delta commit timestamp (ms precision), µs since the epoch
    w_us: int | None  # W_T recorded in that commit
    row: dict[str, Any]
    due_us: int | None  # the caller's due instant for the row

    @property
    def early(self) -> bool:
        """Readable before due: by the commit clock, or committed at a W below due."""
        if self.due_us is None:
            return False
        # The commit timestamp has ms precision: a commit in the due ms is not early.
        return self.commit_us < self.due_us - self.due_us % 1000 or (self.w_us is not None and self.w_us < self.due_us)


def appearances(spec: FeedSpec, tier: str, due_of: Callable[[dict], int | None]) -> list[Appearance]:
    """Every row identity's first appearance in the tier table, oldest commit first."""
    path = spec.tier_path(tier)
    log = TableLog.open(path)
    history = {c["version"]: c for c in log.history(log.version + 1)}
    identity = ["_wl_partition", *spec.key]
    seen: set[tuple] = set()
    out: list[Appearance] = []
    for version in sorted(history):
        commit = history[version]
        state = parse_state(commit.get("userMetadata")) or {}
        rows = TableLog.open(path, version=version).to_arrow().to_pylist()
        current = set()
        for row in rows:
            key = tuple(row.get(c) for c in identity)
            current.add(key)
            if key not in seen:
                out.append(Appearance(version, int(commit["timestamp"]) * 1000, state.get("w"), row, due_of(row)))
        seen = current
    return out
