"""When the next release is due, from a `FeedState` alone (pure; no I/O, no Spark).

Shared by the orchestrators that decide when to start a release: the Dagster
release sensor and the Airflow deferrable trigger. Both ask the same two
questions of the commit state: is a release due now, and, failing that, is a
due moment close enough (within ``release_lead_seconds``) to start a run that
waits for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from waterline.clock import format_instant

if TYPE_CHECKING:
    from waterline.engine.state import FeedState
    from waterline.spec import FeedSpec


def due_now_us(state: "FeedState") -> int | None:
    """The earliest due moment of a release that would change a tier now (NEG_INF: at once);
    None when a release now would change nothing."""
    due = [t.next_due_us for t in state.tiers.values() if t.due and t.next_due_us is not None]
    return min(due) if due else None


def armed_due_us(spec: "FeedSpec", state: "FeedState") -> int | None:
    """The upcoming due moment to pre-arm a release for now, None when none is within the lead.

    Only in clock mode: there W follows the clock, so a due moment in the future
    is certain to arrive; in event mode it waits on data, not on time. The run
    started for it waits on the trusted clock until the moment (see
    `waterline.engine.prearmed`), so starting it early cannot release early.
    """
    lead_us = int(spec.release_lead_seconds) * 1_000_000
    if lead_us <= 0 or spec.waterline.mode != "clock":
        return None
    upcoming = upcoming_due_us(state)
    if upcoming is None or upcoming - state.now_us > lead_us:
        return None
    return upcoming


def upcoming_due_us(state: "FeedState") -> int | None:
    """The earliest moment anything changes for a tier not on hold, past or future."""
    dues = [
        t.next_due_us for t in state.tiers.values()
        if not t.hold and t.next_due_us is not None and t.next_due_us > state.release_w_us
    ]
    return min(dues) if dues else None


def nothing_due_reason(state: "FeedState") -> str:
    """One line saying why no release is due: the next due moment, or that nothing is pending."""
    if not state.tiers:
        return "nothing due: the feed has no tiers"
    held = sorted(name for name, t in state.tiers.items() if t.hold)
    upcoming = [
        (t.next_due_us, name) for name, t in state.tiers.items() if not t.hold and t.next_due_us is not None
    ]
    parts = []
    if upcoming:
        at, tier = min(upcoming)
        parts.append(f"next due {format_instant(max(at, state.now_us))} (tier {tier})")
    elif state.seq == 0:
        parts.append("nothing ingested yet")
    else:
        parts.append("no pending versions")
    if held:
        parts.append(f"on hold: {', '.join(held)}")
    return "nothing due; " + "; ".join(parts)
