"""A feed's status read from Delta commit metadata only: no Spark, no JVM.

Used by `waterline status`, `Feed.status`, the Dagster release sensor and the
Airflow trigger, whose ticks must stay cheap. Everything here is derived from
the states waterline writes into its own commits, read through one `FeedTables` handle.
"""

from __future__ import annotations

from waterline.clock import Clock, SystemClock
from waterline.engine.core.event_time import target_waterline
from waterline.engine.core.results import WaterlineHistory
from waterline.engine.core.status import FeedStatus, TierStatus
from waterline.engine.tables.feed_tables import FeedTables
from waterline.semantics import NEG_INF
from waterline.spec import FeedSpec


def read_feed_status(spec: FeedSpec, *, clock: Clock | None = None, tables: FeedTables | None = None) -> FeedStatus:
    """Per tier: W_T, lag, pending versions, next due moment, whether a release now is due
    (``tables``: the feed's handle when the caller has one open)."""
    clock = clock or SystemClock()
    now = clock.now_us()
    tables = tables or FeedTables.open(spec)
    held = tables.held_state()
    w_release = target_waterline(spec, held, now, None)
    tiers = {}
    exists = tables.held.exists
    for tier in spec.tiers:
        exists = exists or tables.tier(tier).exists
        t = tables.tier_state(tier)
        since = tables.states_since(after_seq=t.seq) if held.seq > t.seq else []
        # GC and other commits repeat the held state; only ingest commits add versions.
        ingests = [s for s in since if s.op == "ingest"]
        new_taus = [s.min_tau.get(tier) for s in ingests]
        candidates = [x for x in [t.next_due, *new_taus] if x is not None]
        next_due = min(candidates) if candidates else None
        due = (not t.hold) and next_due is not None and next_due <= w_release and (
            t.w is None or next_due > t.w or held.seq > t.seq
        )
        if held.reconciles(tier, t) and not t.hold:  # an apply rescheduled it: its next release is due now
            next_due, due = w_release if next_due is None else min(next_due, w_release), True
        tiers[tier] = TierStatus(
            tier=tier, w_us=t.w, seq=t.seq, hold=t.hold,
            lag_us=None if t.w is None else now - t.w,
            pending=t.pending + sum(s.versions for s in ingests),
            next_due_us=None if next_due is None else max(next_due, NEG_INF),
            due=due,
        )
    return FeedStatus(feed=spec.feed, now_us=now, seq=held.seq, release_w_us=w_release,
                      event_w_us=held.event_w, tiers=tiers, exists=exists)


def waterline_history(spec: FeedSpec, tier: str, *, tables: FeedTables | None = None) -> WaterlineHistory:
    """W_T across the tier table's retained waterline commits, and every place it went back."""
    states = (tables or FeedTables.open(spec)).tier(tier).waterline_states()
    history = tuple((version, state["w"]) for version, state in states if state.get("w") is not None)
    regressions = tuple((v0, w0, v1, w1) for (v0, w0), (v1, w1) in zip(history, history[1:]) if w1 < w0)
    return WaterlineHistory(tier=tier, commits=history, regressions=regressions)

