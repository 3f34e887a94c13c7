"""Hypothesis strategies for feeds whose spec changes mid-history (waterline.semantics.spec_history).

Rows are ``{"e": event instant, "x": a guard value}`` (plus ``"y"`` once a spec adds it);
the policies are delays, windows (an expiry) and a guarded delay (a recall when the guard
stops holding), over a small range of instants so that dues, applies and releases collide.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from waterline.semantics import POS_INF
from waterline.semantics.spec_history import Policy, SpecHistory

NAMES = ("t1", "t2", "t3")
IDENTITIES = ("a", "b", "c", "d")
BASE_COLUMNS = {"e": "bigint", "x": "int"}
WIDER_COLUMNS = {"e": "bigint", "x": "bigint", "y": "string"}


def delay(d: int) -> Policy:
    return Policy(f"e + {d} <= W", lambda p: ((p["e"] + d, POS_INF),))


def window(d: int, n: int) -> Policy:
    return Policy(f"e + {d} <= W < e + {d + n}", lambda p: ((p["e"] + d, p["e"] + d + n),))


def gated(d: int) -> Policy:
    return Policy(f"x > 0 AND e + {d} <= W", lambda p: ((p["e"] + d, POS_INF),) if p["x"] > 0 else ())


POLICIES = (delay(0), delay(3), delay(6), window(2, 5), window(0, 9), gated(2))
policies = st.sampled_from(POLICIES)


@dataclass
class Drawn:
    """A drawn history and the applies it went through: (spec number, tiers before, tiers after)."""

    history: SpecHistory
    applies: list[tuple[int, dict[str, Policy], dict[str, Policy]]] = field(default_factory=list)


@st.composite
def rows(draw, columns):
    changes = {}
    for identity in draw(st.lists(st.sampled_from(IDENTITIES), unique=True, max_size=3)):
        if draw(st.integers(0, 5)) == 0:
            changes[identity] = None
            continue
        row = {"e": draw(st.integers(0, 30)), "x": draw(st.integers(0, 2))}
        if "y" in columns:
            row["y"] = draw(st.sampled_from(["p", "q"]))
        changes[identity] = row
    return changes


@st.composite
def next_tiers(draw, history: SpecHistory, retired: set[str]):
    tiers = {}
    for name in NAMES:
        if name in retired:
            continue
        current = history.spec.tiers.get(name)
        choice = draw(st.integers(0, 3))
        if choice == 0 and current is not None:
            continue  # retired
        if choice == 1 and current is None:
            continue  # not added (yet)
        tiers[name] = current if (choice == 2 and current is not None) else draw(policies)
    return tiers


@st.composite
def spec_histories(draw, max_steps: int = 14) -> Drawn:
    """Ingests, releases (W a little behind the clock, as an event waterline is) and applies."""
    now = 0
    first = {n: draw(policies) for n in draw(st.lists(st.sampled_from(NAMES), unique=True, min_size=1, max_size=2))}
    drawn = Drawn(SpecHistory(first, BASE_COLUMNS, now))
    history, retired = drawn.history, set()
    for _ in range(draw(st.integers(1, max_steps))):
        now += draw(st.integers(0, 4))
        step = draw(st.sampled_from(["ingest", "ingest", "release", "release", "apply"]))
        if step == "ingest":
            history.ingest(draw(rows(history.spec.columns)))
        elif step == "release":
            history.release(now - draw(st.integers(0, 5)), now)
        else:
            before = dict(history.spec.tiers)
            tiers = draw(next_tiers(history, retired))
            columns = draw(st.sampled_from([history.spec.columns, WIDER_COLUMNS]))
            retired |= set(before) - set(tiers)
            spec = history.apply(tiers, columns, now)
            drawn.applies.append((spec.number, before, tiers))
    return drawn
