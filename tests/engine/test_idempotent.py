"""Every waterline commit carries a Delta transaction id: a replay is a no-op, and a
writer working from a stale state has its commit skipped, notices, and recomputes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.engine.feedkit import PAYLOAD, far_future_clock, make_spec, read_tier, write_partition
from tests.engine.model import MINUTE, POLICIES, FeedModel, expected_tier
from tests.engine.test_state_survival import BASE_US, _model_row, _row

pytestmark = pytest.mark.spark
TIERS = {t: POLICIES[t] for t in ("d10", "win")}


def _stale_once(monkeypatch, module, name: str, stale):
    """Make the feed's state reader ``name`` (`engine.tables.feed_tables`), as ``module`` calls
    it, return ``stale`` on its first call only (a writer that read the state just before another
    writer's commit). Only ``module``'s reads are affected."""
    from waterline.engine.tables import feed_tables

    calls = []
    real = getattr(feed_tables, name)

    def reader(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            return stale
        return real(*args, **kwargs)

    seen = SimpleNamespace(**{k: getattr(feed_tables, k) for k in dir(feed_tables) if not k.startswith("__")})
    setattr(seen, name, reader)
    monkeypatch.setattr(module, "feed_tables", seen)
    return calls


def test_replayed_commits_are_skipped_and_stale_writers_recompute(spark, tmp_path, monkeypatch):
    from deltalake import DeltaTable
    from pyspark.sql import functions as F

    from waterline.engine.core.races import SkippedCommit, new_token
    from waterline.engine.core.state import HeldState
    from waterline.engine.delta.table_log import APP_SEQ, TableLog
    from waterline.engine.tables import feed_tables
    from waterline.engine.ingest import ingest as ingest_module
    from waterline.engine.release import planning as planning_module
    from waterline.engine.spark.commits import commit_state
    from waterline.engine.ingest.ingest import ingest
    from waterline.engine.release.release import release

    spec = make_spec(tmp_path, TIERS)
    clock = far_future_clock()
    model = FeedModel(TIERS)
    first = [_row(i, 5 * i, "a") for i in range(6)]
    write_partition(tmp_path, "a", first)
    ingest(spark, spec, "a", clock=clock)
    model.ingest("a", [_model_row(r) for r in first])
    release(spark, spec, as_of_us=BASE_US + 20 * MINUTE, clock=clock)

    # 1. A replay of the held append (same transaction version) is a no-op, and is noticed.
    held = spec.held_path
    before, rows = DeltaTable(held).version(), DeltaTable(held).to_pyarrow_table().num_rows
    replay = spark.read.format("delta").load(held).limit(1).withColumn("v", F.lit("replayed"))
    token = new_token()
    replayed = feed_tables.held_state(TableLog.open(held), spec.feed).evolve(token=token)
    with commit_state(spark, replayed, app=APP_SEQ, version=1):
        replay.write.format("delta").mode("append").save(held)
    assert (DeltaTable(held).version(), DeltaTable(held).to_pyarrow_table().num_rows) == (before, rows)
    with pytest.raises(SkippedCommit):
        feed_tables.committed_version(TableLog.open(held), token, after=before)

    # 2. An ingest that read the state before the last ingest committed: its append reuses
    # seq 1, Delta skips it, the engine notices and recomputes seq 2; nothing doubled.
    calls = _stale_once(monkeypatch, ingest_module, "held_state", HeldState(seq=0, sources={}, event_w=None, n=0))
    second = [dict(r, v="b") if r["id"] % 2 else r for r in first]
    write_partition(tmp_path, "a", second)
    assert ingest(spark, spec, "a", clock=clock).seq == 2
    assert len(calls) == 2, "the skipped commit must make the ingest recompute"
    model.ingest("a", [_model_row(r) for r in second])
    assert DeltaTable(held).transaction_version(APP_SEQ) == 2

    # 3. A release that read tier d10's state before the last release (lower W_T, same
    # commit number) asks to go back: its commit is skipped (the commit number was used),
    # it replans from the new state, and W_T stays where it was.
    old = feed_tables.tier_state(TableLog.open(spec.tier_path("d10")))
    old = old.evolve(w=BASE_US, n=old.n - 1)
    calls = _stale_once(monkeypatch, planning_module, "tier_state", old)
    out = release(spark, spec, as_of_us=BASE_US + 10 * MINUTE, clock=clock)
    assert len(calls) > len(TIERS), "the skipped commit must make the release replan"
    w = BASE_US + 20 * MINUTE
    for tier in TIERS:
        assert out.tiers[tier].w_us == w
        assert feed_tables.tier_state(TableLog.open(spec.tier_path(tier))).w == w
        got = {k: (tuple(r[c] for c in PAYLOAD), r["_wl_seq"]) for k, r in read_tier(spark, spec, tier).items()}
        assert got == expected_tier(model, tier, w), f"tier {tier} at W={w}"
