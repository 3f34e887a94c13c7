"""The feed's state survives table maintenance: 60 foreign commits and log cleanup.

A maintenance job (property changes, OPTIMIZE, VACUUM) commits to the held and
tier tables between waterline runs, then Delta's log cleanup removes every
commit file waterline wrote. The next ingest must continue the sequence (never
reuse seq 1) and the next release must continue from W_T, with every tier equal
to `waterline.semantics`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.engine.feedkit import PAYLOAD, far_future_clock, make_spec, read_tier, write_partition
from tests.engine.model import MINUTE, POLICIES, FeedModel, expected_tier

pytestmark = pytest.mark.spark

BASE_US = 1_767_261_600_000_000  # 2026-01-01T10:00:00Z
TIERS = {t: POLICIES[t] for t in ("d10", "win")}
FOREIGN_COMMITS = 60


def _row(i: int, minute: int, v: str) -> dict:
    from waterline.clock import format_instant

    return {"id": i, "event_time": format_instant(BASE_US + minute * MINUTE).replace("T", " ").rstrip("Z"),
            "status": "final", "embargo_until": None, "v": v}


def _model_row(row: dict) -> dict:
    from waterline.clock import parse_instant

    return dict(row, event_time=parse_instant(row["event_time"].replace(" ", "T") + "Z"))


def _maintain(path: str) -> None:
    """FOREIGN_COMMITS commits by a maintenance job (a second writer, `deltalake`):
    OPTIMIZE, VACUUM and property changes, ending with a short log retention."""
    from deltalake import DeltaTable

    start = DeltaTable(path).version()
    table = DeltaTable(path)
    table.optimize.compact()
    table.vacuum(retention_hours=168, dry_run=False, enforce_retention_duration=False)
    i = 0
    while DeltaTable(path).version() < start + FOREIGN_COMMITS - 1:
        table.alter.set_table_properties({"delta.logRetentionDuration": f"interval {30 + i % 2} days"})
        i += 1
    table.alter.set_table_properties({"delta.logRetentionDuration": "interval 1 hours",
                                      "delta.deletedFileRetentionDuration": "interval 1 hours"})


def _clean_log(path: str) -> list[str]:
    """Age every commit file by two days, checkpoint, and let Delta's log cleanup run.

    Delta expires log files by modification time, rounded down to the day, so the
    files are aged rather than waited for."""
    from deltalake import DeltaTable

    log = Path(path) / "_delta_log"
    old = time.time() - 2 * 86_400
    for f in log.iterdir():
        os.utime(f, (old, old))
    table = DeltaTable(path)
    table.create_checkpoint()
    table.cleanup_metadata()
    return sorted(f.name for f in log.glob("*.json"))


def test_state_survives_foreign_commits_and_log_cleanup(spark, tmp_path):
    from deltalake import DeltaTable

    from waterline import Feed

    spec = make_spec(tmp_path, TIERS)
    feed = Feed(spec, spark=spark, clock=far_future_clock())
    model = FeedModel(TIERS)
    first = [_row(i, 5 * i, "a") for i in range(6)]
    write_partition(tmp_path, "a", first)
    assert feed.ingest("a").seq == 1
    model.ingest("a", [_model_row(r) for r in first])
    feed.release(as_of=BASE_US + 20 * MINUTE)

    for path in [spec.held_path, *(spec.tier_path(t) for t in TIERS)]:
        start = DeltaTable(path).version()
        _maintain(path)
        assert DeltaTable(path).version() - start >= FOREIGN_COMMITS
        remaining = _clean_log(path)
        # every commit waterline made is gone: only the newest commit file is left
        assert len(remaining) == 1, f"{path}: log cleanup left {remaining}"

    second = [dict(r, v="b") if r["id"] % 2 else r for r in first] + [_row(9, 3, "late")]
    write_partition(tmp_path, "a", second)
    result = feed.ingest("a")
    assert result.seq == 2, "the ingest after maintenance must continue the sequence"
    model.ingest("a", [_model_row(r) for r in second])

    for minute in (15, 40):  # the first asks to go back: W_T stays at 20 minutes
        out = feed.release(as_of=BASE_US + minute * MINUTE)
        w = BASE_US + max(20, minute) * MINUTE
        for tier in TIERS:
            assert out.tiers[tier].w_us == w
            got = {k: (tuple(r[c] for c in PAYLOAD), r["_wl_seq"]) for k, r in read_tier(spark, spec, tier).items()}
            assert got == expected_tier(model, tier, w), f"tier {tier} at W={w}"
