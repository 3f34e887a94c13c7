"""A feed on Spark + Delta and its model (`SpecHistory`) driven by the same steps: ingests of
partition ``a``, releases, applies of a changed spec and gc, each tier compared with the model."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from tests.engine.feedkit import far_future_clock, iso_any_year, make_spec, read_tier, write_partition
from waterline import Feed
from waterline.clock import parse_instant
from waterline.engine.delta.table_log import TableLog
from waterline.engine.tables import feed_tables
from waterline.semantics import POS_INF
from waterline.semantics.spec_history import Policy, SpecHistory

MINUTE = 60_000_000
DAY = "2026-01-01"


def at(hhmm: str) -> int:
    """``HH:MM`` of the test day, in µs."""
    return parse_instant(f"{DAY}T{hhmm}:00Z")


def delay(minutes: int) -> tuple[str, Policy]:
    """A delay tier: its SQL and its model."""
    sql = f"event_time + INTERVAL {minutes} MINUTES <= WATERLINE()"
    return sql, Policy(sql, lambda p: ((p["e"] + minutes * MINUTE, POS_INF),))


def window(start: int, length: int) -> tuple[str, Policy]:
    """Shown from ``start`` minutes after the event for ``length`` minutes (an expiry)."""
    sql = (f"event_time + INTERVAL {start} MINUTES <= WATERLINE() AND "
           f"WATERLINE() < event_time + INTERVAL {start + length} MINUTES")
    return sql, Policy(sql, lambda p: ((p["e"] + start * MINUTE, p["e"] + (start + length) * MINUTE),))


class Both:
    """The feed and its model, stepped together (the model's wall clock is the release's W)."""

    def __init__(self, spark, root: Path, tiers: Mapping[str, tuple[str, Policy]]) -> None:
        self.spark, self.root, self.tiers = spark, root, dict(tiers)
        self.feed = self._feed()
        self.model = SpecHistory({t: p for t, (_, p) in tiers.items()}, {}, at_us=0)
        self.rows: dict[int, tuple[str | int, str]] = {}  # partition a as last ingested

    def _feed(self) -> Feed:
        return Feed(make_spec(self.root, {t: sql for t, (sql, _) in self.tiers.items()}), spark=self.spark,
                    clock=far_future_clock())

    def ingest(self, rows: Mapping[int, tuple[str | int, str]]) -> None:
        """Partition ``a`` becomes ``rows`` (id -> (event time: HH:MM of the test day or µs, v));
        ids left out are removed."""
        events = {i: at(t) if isinstance(t, str) else t for i, (t, _) in rows.items()}
        write_partition(self.root, "a", [{"id": i, "event_time": iso_any_year(events[i]), "status": "final", "v": v}
                                         for i, (_, v) in rows.items()])
        self.feed.ingest("a")
        changes = {("a", i): {"e": events[i], "v": v} for i, (_, v) in rows.items()}
        changes.update({("a", i): None for i in set(self.rows) - set(rows)})
        self.rows = dict(rows)
        self.model.ingest(changes)

    def release(self, hhmm: str | int) -> None:
        """Release to W (HH:MM of the test day, or µs); the model's wall clock is W."""
        w = at(hhmm) if isinstance(hhmm, str) else hhmm
        self.feed.release(as_of=w)
        self.model.release(w, at_us=max(w, self.model.now_us))

    def apply(self, tiers: Mapping[str, tuple[str, Policy]], *, feed_apply: bool = True) -> None:
        self.tiers = dict(tiers)
        self.feed = self._feed()
        if feed_apply:
            self.feed.apply()
        self.model.apply({t: p for t, (_, p) in tiers.items()}, {}, at_us=self.model.now_us)

    def gc(self) -> int:
        removed = self.feed.gc().versions_removed
        assert removed == self.model.gc(), "gc removed another number of versions than the model"
        return removed

    def tier(self, tier: str) -> dict[tuple, str]:
        if not TableLog.open(self.feed.spec.tier_path(tier)).exists:
            return {}  # a tier added before any release: built by the feed's next release
        return {k: r["v"] for k, r in read_tier(self.spark, self.feed.spec, tier).items()}

    def oracle(self, tier: str) -> dict[tuple, str]:
        last = self.model.last(tier)
        return {} if last is None else {i: v.payload["v"] for i, v in last.state.items()}

    def w(self, tier: str) -> int | None:
        return feed_tables.tier_state(TableLog.open(self.feed.spec.tier_path(tier))).w

    def check(self) -> None:
        """Every live tier equals the model, rows and W_T."""
        for tier in self.tiers:
            assert self.tier(tier) == self.oracle(tier), f"tier {tier} differs from the model"
            last = self.model.last(tier)
            assert self.w(tier) == (None if last is None else last.w), f"tier {tier}: W_T differs from the model"
