"""When the next release is due, from a `FeedStatus` alone (pure; no I/O, no Spark).

The one "is a release due?" decision (`DueMoments.of`, which `waterline.Feed.due`
answers with). The orchestrators that decide when to start a release, the Dagster
release sensor and the Airflow deferrable trigger, take it from there and only
act on it: is a release due now, and, failing that, is a due moment close enough
(within ``release_lead_seconds``) to start a run that waits for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from waterline.clock import format_instant
from waterline.engine.core.status import FeedStatus
from waterline.semantics import NEG_INF
from waterline.spec import FeedSpec


@dataclass(frozen=True)
class DueMoments:
    """The answers for one `FeedStatus`: what a scheduler should do now."""

    status: FeedStatus
    due_us: int | None  # a release now would change a tier: its earliest due moment (NEG_INF: at once)
    armed_us: int | None  # else an upcoming moment within the lead to start a waiting run for (clock mode)
    upcoming_us: int | None  # the earliest moment anything changes for a tier not on hold

    @classmethod
    def of(cls, spec: FeedSpec, status: FeedStatus) -> DueMoments:
        """The decision for ``status``: what `due_now_us`, `armed_due_us` and `upcoming_due_us` say of it."""
        return cls(status=status, due_us=due_now_us(status), armed_us=armed_due_us(spec, status),
                   upcoming_us=upcoming_due_us(status))

    @property
    def run_for_us(self) -> int | None:
        """The moment a release run should be started for now, None when none should."""
        return self.due_us if self.due_us is not None else self.armed_us

    @property
    def run_key(self) -> str | None:
        """``<feed>:<seq>:<run_for_us>`` naming the moment a run is for, None when none should
        start. Every look at the same commit state names the same moment (and a pre-armed moment
        has the key it has once due, while no ingest intervenes), so a scheduler starts one run per key."""
        return self.key_of(self.run_for_us)

    def key_of(self, moment_us: int | None) -> str | None:
        """The `run_key` form for ``moment_us`` (one of this decision's moments), None for None."""
        return None if moment_us is None else f"{self.status.feed}:{self.status.seq}:{moment_us}"

    @property
    def run_for_text(self) -> str | None:
        """`run_for_us` as text: ``now`` for a release due at once, else the ISO instant."""
        at = self.run_for_us
        return None if at is None else "now" if at <= NEG_INF else format_instant(at)

    @property
    def reason(self) -> str:
        """One line: why nothing is due, or what is."""
        if self.due_us is not None:
            return "a release is due now"
        if self.armed_us is not None:
            return f"due moment {format_instant(self.armed_us)} is within the lead"
        return nothing_due_reason(self.status)


def due_now_us(state: FeedStatus) -> int | None:
    """The earliest due moment of a release that would change a tier now (NEG_INF: at once);
    None when a release now would change nothing."""
    due = [t.next_due_us for t in state.tiers.values() if t.due and t.next_due_us is not None]
    return min(due) if due else None


def armed_due_us(spec: FeedSpec, state: FeedStatus) -> int | None:
    """The upcoming due moment to pre-arm a release for now, None when none is within the lead.

    Only in clock mode: there W follows the clock, so a due moment in the future
    is certain to arrive; in event mode it waits on data, not on time. The run
    started for it waits on the trusted clock until the moment (see
    `waterline.engine.release.prearmed`), so starting it early cannot release early.
    """
    lead_us = int(spec.release_lead_seconds) * 1_000_000
    if lead_us <= 0 or spec.waterline.mode != "clock":
        return None
    upcoming = upcoming_due_us(state)
    if upcoming is None or upcoming - state.now_us > lead_us:
        return None
    return upcoming


def upcoming_due_us(state: FeedStatus) -> int | None:
    """The earliest moment anything changes for a tier not on hold, past or future."""
    dues = [
        t.next_due_us for t in state.tiers.values()
        if not t.hold and t.next_due_us is not None and t.next_due_us > state.release_w_us
    ]
    return min(dues) if dues else None


def nothing_due_reason(state: FeedStatus) -> str:
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


def arming_line(feed: str, due_us: int | None, now_us: int) -> str | None:
    """What an orchestrated run started for ``due_us`` logs before `release_run`: that it
    waits (pre-armed), or that the moment passed before Spark was up (a lead too short
    for this machine's start-up). None for a run asked for now."""
    if due_us is None or due_us <= NEG_INF:
        return None
    if due_us > now_us:
        return f"{feed}: pre-armed; waiting for the due moment {format_instant(due_us)}"
    return (f"{feed}: the due moment {format_instant(due_us)} passed {(now_us - due_us) / 1e6:.1f} s before "
            "Spark was up; releasing at once (a longer release_lead_seconds would pre-arm it)")
