"""Property test: rows drawn from every type's extremes run through ingest, a revision (changes,
removals, new rows) and releases on both paths (driver and Spark), on real local Spark and
Delta; every tier equals `waterline.semantics`, and the statistics of every live file of
the tiers and held hold the file's values.

Event times include 0001-01-01, 9999-12-31 23:59:59.999999 and instants within the tiers'
intervals of Spark's last one (year 294247), where ``event_time + INTERVAL ...`` cannot be
represented and the bound is NULL (docs/semantics.md, "Bounds past the last instant").
WATERLINE_EXTREMES_EXAMPLES sets the number of examples.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from tests.engine.feedkit import local_reads
from tests.interop.extreme_draws import (
    BASE_US, LAST_US, MINUTE, PAYLOAD, POS_INF, TIERS, VALUES, ExtremesModel, check_statistics, source_row,
    tier_rows, values_of,
)
from tests.interop.extremes import extreme_spec, tame_rows, wild_rows, write_source

pytestmark = [pytest.mark.spark, pytest.mark.heavy(4)]

EXAMPLES = int(os.environ.get("WATERLINE_EXTREMES_EXAMPLES", "4"))
KEYS = st.integers(1, 8)
STATS = {"examples": 0, "rows": 0, "rows_past_9999": 0, "releases": 0, "tier_checks": 0, "files_checked": 0}
COLUMNS = ("id", "event_time", *PAYLOAD)


def _revised(first: dict, revision: dict) -> dict:
    out = {}
    for key in first.keys() | revision.keys():
        move = revision.get(key, "same")
        if move == "same" and key in first:
            out[key] = first[key]
        elif isinstance(move, dict):
            out[key] = move
    return out


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
# One example written out: rows at Spark's last instant and within 5 minutes of it (their
# d10 and win bounds overflow), at 9999-12-31 23:59:59.999999 with NaN and a 100 KB string.
@example(first={1: values_of(tame_rows()[0], POS_INF - 5 * MINUTE), 2: values_of(wild_rows()[0], LAST_US),
                3: values_of(tame_rows()[1], BASE_US)},
         revision={1: "same", 2: "gone", 3: values_of(tame_rows()[2], POS_INF), 4: values_of(tame_rows()[3], POS_INF)},
         minutes=(20, 5), to_the_end=True, paths=("0", None))
@given(first=st.dictionaries(KEYS, VALUES, min_size=1, max_size=6),
       revision=st.dictionaries(KEYS, st.sampled_from(["same", "gone"]) | VALUES, max_size=6),
       minutes=st.tuples(st.integers(-5, 45), st.integers(0, 45)),
       to_the_end=st.booleans(), paths=st.tuples(st.sampled_from(["0", None]), st.sampled_from(["0", None])))
def test_extremes_through_ingest_revision_release_read(spark, first, revision, minutes, to_the_end, paths):
    from waterline import Feed
    from waterline.clock import FixedClock

    root = Path(tempfile.mkdtemp(prefix="wl-extremes-"))
    spec = extreme_spec(root, TIERS)
    feed = Feed(spec, spark=spark, clock=FixedClock(LAST_US))  # the trusted clock lets W reach year 9999
    model = ExtremesModel()
    w1 = BASE_US + minutes[0] * MINUTE
    # the second release reaches 9999-12-31 23:59:59.999999 in some examples
    w2 = LAST_US if to_the_end else w1 + minutes[1] * MINUTE
    for output, w, limit in ((first, w1, paths[0]), (_revised(first, revision), w2, paths[1])):
        write_source(root, "tame", [source_row(k, v) for k, v in sorted(output.items())])
        assert feed.ingest("tame").versions_written == model.ingest(output)
        with local_reads(limit):  # "0": through Spark; None: staged on the driver
            result = feed.release(as_of=w)
        STATS["releases"] += 1
        for tier in TIERS:
            assert result.tiers[tier].w_us == w
            assert tier_rows(spec.tier_path(tier)) == model.tier(tier, w), f"tier {tier} at W={w}"
            STATS["tier_checks"] += 1
        STATS["rows"] += len(output)
        STATS["rows_past_9999"] += sum(v["event_us"] > LAST_US for v in output.values())
    for path in (*(spec.tier_path(t) for t in TIERS), spec.held_path):
        STATS["files_checked"] += check_statistics(path, COLUMNS)
    STATS["examples"] += 1


def test_report_extremes_property():
    """Runs after the property test (file order) and prints what it covered; run with -s."""
    print(f"\n[extremes property] {STATS}")
    assert STATS["examples"] == 0 or (STATS["tier_checks"] == STATS["releases"] * len(TIERS)
                                     and STATS["files_checked"] > 0 and STATS["rows_past_9999"] > 0)


