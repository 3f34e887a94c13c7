"""Property (issue 56): a live feed whose spec changes mid-history (tiers added and retired,
delays shortened and lengthened, windows changed), with ingests, revisions, removals, gc and
releases between the changes, equals `SpecHistory` in every live tier at every release, on
Spark + Delta. Few examples (each is a feed on Spark); the model's own properties are in
tests/semantics/test_spec_history.py."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.engine.respec_kit import Both, delay, window

pytestmark = pytest.mark.spark

POLICIES = {"d0": delay(0), "d10": delay(10), "d20": delay(20), "w15": window(0, 15), "w5_20": window(5, 20)}
NAMES = ("t1", "t2", "t3")

partitions = st.dictionaries(st.integers(0, 4), st.tuples(st.sampled_from([f"10:{m:02d}" for m in range(0, 45, 5)]),
                                                          st.sampled_from("xyz")), max_size=4)
steps = st.lists(st.one_of(
    st.tuples(st.just("ingest"), partitions),
    st.tuples(st.just("release"), st.integers(0, 15)),
    st.tuples(st.just("apply"), st.lists(st.sampled_from([None, *POLICIES]), min_size=3, max_size=3)),
    st.tuples(st.just("gc"), st.none()),
), min_size=3, max_size=8)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])  # shrinking a feed on Spark takes too long
@given(first=st.sampled_from(sorted(POLICIES)), drawn=steps)
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
            chosen = {n: p for n, p in zip(NAMES, arg) if p is not None and n not in retired}
            if not chosen:
                continue
            retired |= set(names) - set(chosen)
            names = chosen
            both.apply({n: POLICIES[p] for n, p in chosen.items()})
            both.check()
    minute += 60
    both.release(f"{10 + minute // 60}:{minute % 60:02d}")
    both.check()
