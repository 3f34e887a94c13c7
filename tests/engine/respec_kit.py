"""A feed on Spark + Delta and its model (`SpecHistory`) driven by the same steps: ingests of
partition ``a``, releases, applies of a changed spec (tiers, policies, the output column
``venue`` added) and gc, each tier compared with the model."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from tests.engine.feedkit import SCHEMA, TRANSFORM, far_future_clock, iso_any_year, make_spec, read_tier, write_partition
from waterline import Feed
from waterline.clock import parse_instant
from waterline.engine.delta.table_log import TableLog
from waterline.engine.tables import feed_tables
from waterline.semantics import POS_INF
from waterline.semantics.spec_history import Policy, SpecHistory

MINUTE = 60_000_000
DAY = "2026-01-01"
VENUE_TRANSFORM = TRANSFORM.replace(" FROM source", ", CAST(venue AS STRING) AS venue FROM source")


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
        self.venue = False  # the output column venue added (by an apply)
        self.feed = self._feed()
        self.model = SpecHistory({t: p for t, (_, p) in tiers.items()}, {}, at_us=0)
        self.rows: dict[int, tuple] = {}  # partition a as last ingested

    def _feed(self) -> Feed:
        tiers = {t: sql for t, (sql, _) in self.tiers.items()}
        if not self.venue:
            return Feed(make_spec(self.root, tiers), spark=self.spark, clock=far_future_clock())
        source = {"format": "json", "path": str(self.root / "src" / "{partition}"),
                  "options": {"schema": SCHEMA + ", venue STRING"}}
        return Feed(make_spec(self.root, tiers, source=source, transform=VENUE_TRANSFORM), spark=self.spark,
                    clock=far_future_clock())

    def ingest(self, rows: Mapping[int, tuple]) -> None:
        """Partition ``a`` becomes ``rows`` (id -> (event time: HH:MM of the test day or µs, v[,
        venue])); ids left out are removed. A venue before the column is added is not read."""
        events = {i: at(r[0]) if isinstance(r[0], str) else r[0] for i, r in rows.items()}
        venues = {i: r[2] if len(r) > 2 and self.venue else None for i, r in rows.items()}
        write_partition(self.root, "a", [{"id": i, "event_time": iso_any_year(events[i]), "status": "final",
                                          "v": r[1], **({} if len(r) < 3 else {"venue": r[2]})}
                                         for i, r in rows.items()])
        self.feed.ingest("a")
        # a NULL in the added column is no value (docs/decisions.md)
        changes = {("a", i): {"e": events[i], "v": r[1], **({} if venues[i] is None else {"venue": venues[i]})}
                   for i, r in rows.items()}
        changes.update({("a", i): None for i in set(self.rows) - set(rows)})
        self.rows = dict(rows)
        self.model.ingest(changes)

    def release(self, hhmm: str | int) -> None:
        """Release to W (HH:MM of the test day, or µs); the model's wall clock is W."""
        w = at(hhmm) if isinstance(hhmm, str) else hhmm
        self.feed.release(as_of=w)
        self.model.release(w, at_us=max(w, self.model.now_us))

    def apply(self, tiers: Mapping[str, tuple[str, Policy]], *, feed_apply: bool = True, venue: bool = False) -> None:
        """Apply ``tiers`` (and the column venue, with ``venue``; once added it stays)."""
        self.tiers, self.venue = dict(tiers), self.venue or venue
        self.feed = self._feed()
        if feed_apply:
            self.feed.apply()
        columns = {"venue": "string"} if self.venue else {}
        self.model.apply({t: p for t, (_, p) in tiers.items()}, columns, at_us=self.model.now_us)

    def gc(self) -> int:
        removed = self.feed.gc().versions_removed
        assert removed == self.model.gc(), "gc removed another number of versions than the model"
        return removed

    def tier(self, tier: str) -> dict[tuple, tuple]:
        """``tier``'s rows as (v, venue) by identity (venue None where the column is not)."""
        if not TableLog.open(self.feed.spec.tier_path(tier)).exists:
            return {}  # a tier added before any release: built by the feed's next release
        return {k: (r["v"], r.get("venue")) for k, r in read_tier(self.spark, self.feed.spec, tier).items()}

    def oracle(self, tier: str) -> dict[tuple, tuple]:
        last = self.model.last(tier)
        return {} if last is None else {i: (v.payload["v"], v.payload.get("venue")) for i, v in last.state.items()}

    def w(self, tier: str) -> int | None:
        return feed_tables.tier_state(TableLog.open(self.feed.spec.tier_path(tier))).w

    def check(self) -> None:
        """Every live tier equals the model, rows and W_T."""
        for tier in self.tiers:
            assert self.tier(tier) == self.oracle(tier), f"tier {tier} differs from the model"
            last = self.model.last(tier)
            assert self.w(tier) == (None if last is None else last.w), f"tier {tier}: W_T differs from the model"
