"""One spec change on a live feed for the orchestrator end-to-end tests (issue 56): a tier
added, a delay shortened and an output column added, in one apply, on the wall clock.

The orchestrators release to the system clock, so the rows' event times are set from the
instant the scenario starts (``t0``): row 1 is due under every delay, row 2 is due under
the shortened delay (10 minutes) but not under the old one (60) until ``t0`` + 40 minutes,
row 3 under none yet (a slow run may see it due under 10 minutes: the oracle says so too). The new tier ``d25`` is built at the apply from what its policy
shows at the feed's W. `waterline.semantics.spec_history.SpecHistory` is the oracle,
stepped with the W_T each release recorded and the instant the apply recorded.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.engine import feedkit
from tests.engine.feedkit import SCHEMA, TRANSFORM, read_tier, write_partition
from tests.engine.respec_kit import MINUTE, delay
from waterline import Feed
from waterline.clock import format_instant
from waterline.engine.delta.table_log import TableLog
from waterline.engine.tables import feed_tables
from waterline.semantics import NEG_INF, POS_INF
from waterline.semantics.spec_history import Policy, SpecHistory

RT = ("TRUE", Policy("TRUE", lambda p: ((NEG_INF, POS_INF),)))
LIVE = {"rt": RT, "delayed": delay(60)}
DEPLOYED = {"rt": RT, "delayed": delay(10), "d25": delay(25)}
VENUE_TRANSFORM = TRANSFORM.replace(" FROM source", ", CAST(venue AS STRING) AS venue FROM source")
#: What `waterline plan` says of the change, each a line of the refusal and of the apply.
CHANGES = ("tier d25 added", "tier delayed: policy", "column venue added")
#: Minutes before t0 of each row's event time.
AGO = {1: 90, 2: 20, 3: 1}


def spec_dict(root: Path, *, deployed: bool, **overrides) -> dict:
    """The live spec (rt, delayed 60 minutes) or the deployed one (delayed 10 minutes, tier
    d25 added, column venue added)."""
    tiers = DEPLOYED if deployed else LIVE
    overrides.setdefault("release_interval_seconds", 1)
    if deployed:
        overrides["source"] = {"format": "json", "path": str(root / "src" / "{partition}"),
                               "options": {"schema": SCHEMA + ", venue STRING"}}
        overrides["transform"] = VENUE_TRANSFORM
    return feedkit.spec_dict(root, {t: sql for t, (sql, _) in tiers.items()}, **overrides)


class LiveChange:
    """The feed's partition ``a`` and its oracle, stepped together."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.t0 = int(time.time()) * 1_000_000
        self.model = SpecHistory({t: p for t, (_, p) in LIVE.items()}, {"v": "string"}, 0)

    def event_us(self, i: int) -> int:
        return self.t0 - AGO[i] * MINUTE

    def ingest(self, feed: Feed, venues: dict[int, str | None]) -> None:
        """Partition ``a`` holds rows ``venues`` (id -> venue, None: none), ingested by ``feed``."""
        rows = [{"id": i, "event_time": format_instant(self.event_us(i)).removesuffix("Z"), "status": "final",
                 "embargo_until": None, "v": f"v{i}", **({} if venue is None else {"venue": venue})}
                for i, venue in venues.items()]
        write_partition(self.root, "a", rows)
        feed.ingest("a")
        self.model.ingest({("a", i): {"e": self.event_us(i), "v": f"v{i}", **({} if v is None else {"venue": v})}
                           for i, v in venues.items()})

    def released(self, feed: Feed) -> int:
        """Step the oracle by the release ``feed``'s tiers recorded (they share one W); that W."""
        ws = {t: tier_w(feed, t) for t in feed.spec.tiers}
        assert len(set(ws.values())) == 1 and None not in ws.values(), ws
        w = next(iter(ws.values()))
        self.model.release(w, at_us=max(w, self.model.now_us))
        return w

    def applied(self, feed: Feed) -> None:
        """Step the oracle by the apply ``feed``'s last spec version records."""
        at = feed.spec_versions()[-1].applied_us
        self.model.apply({t: p for t, (_, p) in DEPLOYED.items()}, {"v": "string", "venue": "string"},
                         at_us=max(at, self.model.now_us))

    def tier(self, feed: Feed, tier: str) -> dict[tuple, tuple]:
        """``tier`` as (partition, id) -> (v, venue), read with deltalake."""
        return {k: (r["v"], r.get("venue")) for k, r in read_tier(None, feed.spec, tier).items()}

    def oracle(self, tier: str) -> dict[tuple, tuple]:
        return {k: (r["v"], r.get("venue")) for k, r in self.model.contents(tier).items()}

    def check(self, feed: Feed) -> None:
        """Every tier of ``feed`` equals the oracle, rows and W_T."""
        for tier in feed.spec.tiers:
            assert self.tier(feed, tier) == self.oracle(tier), f"tier {tier} differs from the oracle"
            assert tier_w(feed, tier) == self.model.last(tier).w, f"tier {tier}: W_T differs from the oracle"


def tier_w(feed: Feed, tier: str) -> int | None:
    return feed_tables.tier_state(TableLog.open(feed.spec.tier_path(tier))).w


def has_column(path: str, column: str) -> bool:
    return column in {name for name, _ in TableLog.open(path).columns()}


__all__ = ["CHANGES", "LiveChange", "has_column", "spec_dict", "tier_w"]
