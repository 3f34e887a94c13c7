"""Property (issue 56): a live feed whose spec changes mid-history (tiers added and retired,
delays shortened and lengthened, windows changed, the output column ``venue`` added), with
ingests, revisions, removals, gc and releases between the changes, equals `SpecHistory` in every live tier at every release, on
Spark + Delta. After the history, `waterline audit` of every live tier over the whole history
is clean (each commit judged by the spec version it was released under), and a release forced
ahead of the wall clock is caught row by row, with the due instants of the policy in force,
exactly where the model's `audit` finds breaches. Few examples (each is a feed on Spark); the
model's own properties are in tests/semantics/test_spec_history.py."""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from tests.engine.respec_kit import MINUTE, Both, delay, window
from waterline.semantics.spec_history import audit

pytestmark = pytest.mark.spark

POLICIES = {"d0": delay(0), "d10": delay(10), "d20": delay(20), "w15": window(0, 15), "w5_20": window(5, 20)}
NAMES = ("t1", "t2", "t3")

# a venue is read once an apply added the column (before, the source's extra field is not read)
partitions = st.dictionaries(st.integers(0, 4), st.tuples(st.sampled_from([f"10:{m:02d}" for m in range(0, 45, 5)]),
                                                          st.sampled_from("xyz"), st.sampled_from([None, "X"])),
                             max_size=4)
steps = st.lists(st.one_of(
    st.tuples(st.just("ingest"), partitions),
    st.tuples(st.just("release"), st.integers(0, 15)),
    # the tiers' policies (None: no such tier), and whether the output column venue is added
    st.tuples(st.just("apply"), st.tuples(st.lists(st.sampled_from([None, *POLICIES]), min_size=3, max_size=3),
                                          st.booleans())),
    st.tuples(st.just("gc"), st.none()),
), min_size=3, max_size=8)


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])  # shrinking a feed on Spark takes too long
@given(first=st.sampled_from(sorted(POLICIES)), drawn=steps)
# a delay lengthened while id 1 shows (since 10:20, kept from 10:25), released again before the
# new policy shows it: the release rewrites the kept row, which the audit must not judge; the
# same apply adds venue, filled for id 0 (a new version) and left NULL for id 1 (none)
@example(first="d10", drawn=[("release", 15), ("release", 10), ("apply", (["d20", None, None], True)),
                             ("ingest", {0: ("10:00", "x", "X"), 1: ("10:10", "x", None), 2: ("10:20", "y", "X")}),
                             ("release", 2)])
def test_every_tier_equals_the_model_across_spec_changes(spark, first, drawn):
    root = Path(tempfile.mkdtemp(prefix="wl-respec-"))
    both = Both(spark, root, {"t1": POLICIES[first]})
    names = {"t1": first}
    retired: set[str] = set()
    minute = 0
    both.ingest({0: ("10:00", "x"), 1: ("10:10", "x")})
    for kind, arg in drawn:
        if kind == "ingest":
            both.ingest(arg)
        elif kind == "release":
            minute += arg
            both.release(f"{10 + minute // 60}:{minute % 60:02d}")
            both.check()
        elif kind == "gc":
            both.gc()
        else:
            drawn_policies, venue = arg
            chosen = {n: p for n, p in zip(NAMES, drawn_policies) if p is not None and n not in retired}
            if not chosen:
                continue
            retired |= set(names) - set(chosen)
            names = chosen
            both.apply({n: POLICIES[p] for n, p in chosen.items()}, venue=venue)
            both.check()
    minute += 60
    both.release(f"{10 + minute // 60}:{minute % 60:02d}")
    both.check()
    _audit_is_clean_and_catches_a_forced_release(both, [POLICIES[p] for p in names.values()])


def _audit_is_clean_and_catches_a_forced_release(both: Both, live: list) -> None:
    """The whole history audits clean; then a row whose event is an hour ahead of the wall
    clock, released at a W past its due instant in the live tiers: exactly the model's breaches."""
    assert audit(both.model) == []
    proofs = both.feed.audit_history()  # `waterline audit`: every tier, retired ones included
    assert set(proofs) >= set(both.tiers)
    for tier, proof in proofs.items():
        assert proof.clean, (tier, proof.breaches[:3], proof.unproven)
    event = (int(time.time() * 1_000_000) // MINUTE + 60) * MINUTE
    # 12 minutes on: every policy but the 20-minute delay shows the row (that one at 22)
    w = event + (22 if all(p is POLICIES["d20"] for p in live) else 12) * MINUTE
    both.ingest({**both.rows, 99: (event, "early")})
    before = len(both.model.commits)
    both.release(w)
    both.check()
    committed = int(time.time() * 1_000_000)  # the commits happened before this instant (and after event - 1h)
    forced = [dataclasses.replace(c, at_us=committed) for c in both.model.commits[before:]]
    want = {(b.tier, b.identity, b.due_us) for b in audit(both.model, both.model.commits[:before] + forced)
            if b.commit >= before}
    got = {(b.tier, b.key, b.due_us) for p in both.feed.audit_history().values() for b in p.breaches}
    assert got == want and want, (got, want)
