"""The feed's state read from Delta commit metadata only: no Spark, no JVM.

Used by `waterline status` and by the Dagster release sensor, whose ticks must
stay cheap. Everything here is derived from the states waterline writes into
its own commits (see `waterline.engine.commits`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from waterline.clock import SystemClock
from waterline.engine.commits import states_since
from waterline.engine.event_time import target_waterline
from waterline.engine.tables import held_state, tier_state
from waterline.semantics import NEG_INF

if TYPE_CHECKING:
    from waterline.spec import FeedSpec


@dataclass(frozen=True)
class TierStatus:
    tier: str
    w_us: int | None  # W_T; None before the first release
    seq: int  # the held sequence the tier has applied
    hold: bool
    lag_us: int | None  # trusted clock minus W_T
    pending: int  # versions not yet taken over at W_T, plus versions ingested since
    next_due_us: int | None  # earliest instant something changes for the tier (NEG_INF: now)
    due: bool  # a release now would change the tier


@dataclass(frozen=True)
class FeedState:
    feed: str
    now_us: int
    seq: int
    release_w_us: int  # the W a release now would use
    event_w_us: int | None
    tiers: dict[str, TierStatus] = field(default_factory=dict)

    @property
    def due(self) -> bool:
        return any(t.due for t in self.tiers.values())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"due": self.due}


def read_feed_state(spec: "FeedSpec", *, clock=None) -> FeedState:
    clock = clock or SystemClock()
    now = clock.now_us()
    hstate = held_state(spec)
    seq = hstate.get("seq", 0)
    w_release = target_waterline(spec, hstate, now, None)
    tiers = {}
    for tier in spec.tiers:
        t = tier_state(spec, tier)
        since = states_since(spec.held_path, key="seq", after=t["seq"]) if seq > t["seq"] else []
        # GC and other commits repeat the held state; only ingest commits add versions.
        ingests = [s for s in since if s.get("op") == "ingest"]
        new_taus = [s.get("min_tau", {}).get(tier) for s in ingests]
        candidates = [x for x in [t.get("next_due"), *new_taus] if x is not None]
        next_due = min(candidates) if candidates else None
        w_t = t["w"]
        due = (not t["hold"]) and next_due is not None and next_due <= w_release and (
            w_t is None or next_due > w_t or seq > t["seq"]
        )
        tiers[tier] = TierStatus(
            tier=tier, w_us=w_t, seq=t["seq"], hold=t["hold"],
            lag_us=None if w_t is None else now - w_t,
            pending=int(t.get("pending") or 0) + sum(int(s.get("versions", 0)) for s in ingests),
            next_due_us=None if next_due is None else max(next_due, NEG_INF),
            due=due,
        )
    return FeedState(feed=spec.feed, now_us=now, seq=seq, release_w_us=w_release,
                     event_w_us=hstate.get("event_w"), tiers=tiers)
