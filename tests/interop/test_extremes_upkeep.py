"""gc and maintain on a feed holding every type's extremes, event times at Spark's last
instant (year 294247) among them: nothing is lost (the tiers equal `waterline.semantics`
before and after, and the same output ingested again writes no version), and the compacted
files' statistics stay trustworthy (they hold their values, and every reader's filtered
read returns what its unfiltered read plus the filter does); audit proves every release,
and the sharing server hands out the compacted tier's rows."""

from __future__ import annotations

import pytest

from tests.engine.feedkit import local_reads
from tests.interop.extreme_draws import (
    BASE_US, LAST_US, MINUTE, PAYLOAD, POS_INF, TIERS, ExtremesModel, check_statistics, source_row, tier_rows,
    values_of,
)
from tests.interop.extremes import FILTERED, extreme_spec, tame_rows, wild_rows, write_source
from tests.interop.filtered_reads import every_reader

pytestmark = [pytest.mark.spark, pytest.mark.heavy(4)]


def _outputs() -> tuple[dict, dict]:
    rows = tame_rows() + wild_rows()
    events = [BASE_US, LAST_US, POS_INF, POS_INF - 5 * MINUTE, BASE_US + 3 * MINUTE, -62_135_596_800_000_000,
              BASE_US + 20 * MINUTE]
    first = {r["id"]: values_of(r, e) for r, e in zip(rows, events)}
    second = dict(first)
    second[3] = {**first[3], "s": "revised", "event_us": POS_INF - MINUTE}
    del second[6]
    return first, second


def test_gc_and_maintain_lose_nothing_and_keep_statistics_trustworthy(spark, tmp_path):
    from tests.interop.test_readers import _duckdb, _shared_as_released
    from waterline import Feed
    from waterline.clock import FixedClock

    spec = extreme_spec(tmp_path, TIERS, audiences={"r": ["all"]})
    feed = Feed(spec, spark=spark, clock=FixedClock(LAST_US))
    model = ExtremesModel()
    first, second = _outputs()
    w = BASE_US
    for output, limit in ((first, None), (second, "0"), (first, None)):  # a revision, then back
        write_source(tmp_path, "tame", [source_row(k, v) for k, v in sorted(output.items())])
        assert feed.ingest("tame").versions_written == model.ingest(output)
        w += 15 * MINUTE
        with local_reads(limit):
            feed.release(as_of=w)
    w = LAST_US
    feed.release(as_of=w)

    def tiers_as_modelled() -> None:
        for tier in TIERS:
            assert tier_rows(spec.tier_path(tier)) == model.tier(tier, w), tier

    tiers_as_modelled()
    gone = feed.gc()
    assert gone.versions_removed > 0 and gone.files_compacted  # the revised and removed rows' old versions
    maintained = feed.maintain()
    assert sum(maintained.tables[t].files_compacted for t in TIERS) >= 2  # tiers written by three releases
    tiers_as_modelled()
    write_source(tmp_path, "tame", [source_row(k, v) for k, v in sorted(first.items())])
    assert feed.ingest("tame").versions_written == 0  # gc kept each row's newest version
    duck = _duckdb()
    columns = list(FILTERED)
    for path in (*(spec.tier_path(t) for t in TIERS), spec.held_path):
        assert check_statistics(path, ("id", "event_time", *PAYLOAD)) >= 1
        for outcome in every_reader(spark, duck, path, columns):
            assert not outcome.missed, f"{path}: {outcome.reader} missed rows: {outcome.missed}"
    assert all(report.violations == 0 for report in feed.audit_current().values())
    _shared_as_released(spec, tmp_path, sorted(model.tier("all", w)))  # the sharing server's files of it
