"""The oracle side of engine tests: DESIGN.md's ingest rule and the tiers' policies in Python.

The policies below are written twice on purpose: as Spark SQL for the engine and
as plain Python visibility for `waterline.semantics`, so the engine is checked
against an independent reading of the same rules.
"""

from __future__ import annotations

from typing import Mapping

from waterline.semantics import NEG_INF, POS_INF, Version, branch_interval, visibility

MINUTE = 60_000_000

POLICIES = {
    "d10": "event_time + INTERVAL 10 MINUTES <= WATERLINE()",
    "win": "event_time <= WATERLINE() AND WATERLINE() < event_time + INTERVAL 30 MINUTES",
    "mixed": "(status = 'final' AND event_time + INTERVAL 5 MINUTES <= WATERLINE()) OR status = 'prelim'",
    "emb": "embargo_until <= WATERLINE()",
    "gap": "WATERLINE() < event_time OR event_time + INTERVAL 20 MINUTES <= WATERLINE()",
}


def python_vis(tier: str, row: Mapping) -> tuple:
    """Visibility of a row under POLICIES[tier], evaluated in Python via the semantics rules."""
    e, status, emb = row["event_time"], row["status"], row["embargo_until"]
    if tier == "d10":
        branches = [branch_interval(True, [(e + 10 * MINUTE, False)], [])]
    elif tier == "win":
        branches = [branch_interval(True, [(e, False)], [(e + 30 * MINUTE, True)])]
    elif tier == "mixed":
        final = None if status is None else status == "final"
        prelim = None if status is None else status == "prelim"
        branches = [branch_interval(final, [(e + 5 * MINUTE, False)], []), branch_interval(prelim, [], [])]
    elif tier == "emb":
        branches = [branch_interval(True, [(emb, False)], [])]
    elif tier == "gap":
        branches = [branch_interval(True, [], [(e, True)]), branch_interval(True, [(e + 20 * MINUTE, False)], [])]
    else:
        raise KeyError(tier)
    return visibility(branches)


class FeedModel:
    """Versions of a feed as DESIGN.md defines them, built from the same ingests as the engine."""

    def __init__(self, tiers) -> None:
        self.tiers = list(tiers)
        self.versions: list[Version] = []
        self.seq = 0

    def current(self, partition: str) -> dict:
        latest: dict = {}
        for v in self.versions:
            if v.identity[0] == partition:
                latest[v.identity] = v
        return {i: v for i, v in latest.items() if not v.is_removal}

    def ingest(self, partition: str, rows: list[Mapping]) -> int:
        """Append versions for what changed; returns how many (the engine's seq moves only if > 0)."""
        current = self.current(partition)
        new = {(partition, r["id"]): dict(r) for r in rows}
        changed = []
        for identity, payload in new.items():
            old = current.get(identity)
            if old is None or dict(old.payload) != payload:
                vis = {t: python_vis(t, payload) for t in self.tiers}
                changed.append((identity, payload, vis))
        for identity in current:
            if identity not in new:
                changed.append((identity, None, {}))
        if changed:
            self.seq += 1
            self.versions += [Version(i, self.seq, p, v) for i, p, v in changed]
        return len(changed)


def expected_tier(model: FeedModel, tier: str, w: int, seq: int | None = None) -> dict:
    """The tier after a release to ``w`` of the versions ingested through ``seq`` (default: all)."""
    from waterline.semantics import tier_state

    state = tier_state(model.versions, tier, w, model.seq if seq is None else seq)
    return {identity: (tuple(v.payload[c] for c in ("id", "event_time", "status", "embargo_until", "v")), v.seq)
            for identity, v in state.items()}


def expected_outlook(model: FeedModel, tier: str, w: int) -> tuple[int | None, int]:
    """(next_due, pending) after a release to w: the first visibility boundary of any version
    after w, and how many versions have not taken over yet."""
    pending = sum(1 for v in model.versions if v.tau(tier) > w)
    boundaries = [
        b for v in model.versions for interval in v.vis_for(tier) for b in interval if w < b < POS_INF
    ]
    return (min(boundaries) if boundaries else None), pending


__all__ = ["MINUTE", "POLICIES", "FeedModel", "expected_outlook", "expected_tier", "python_vis", "NEG_INF", "POS_INF"]
