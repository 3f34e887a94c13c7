"""The tier asset checks agree with the engine after table maintenance.

60 foreign commits (OPTIMIZE, VACUUM, property changes by a second writer) and
Delta's log cleanup remove every commit file waterline wrote to the tier tables.
The checks read W_T through the same `TableLog` as the engine (the state table
property survives cleanup), so they pass, and report the engine's W_T, where a
reader of the last 50 commits would find no W_T and flag every row as early.
"""

from __future__ import annotations

import pytest
from dagster import AssetKey, AssetSelection, DagsterInstance, materialize

from tests.dagster.feeds import rows, spec as make_feed, write_partition
from tests.engine.test_state_survival import FOREIGN_COMMITS, _clean_log, _maintain
from waterline import Feed
from waterline.dagster import definitions_from_specs
from waterline.dagster.proof_check import proof_check_keys
from waterline.dagster.translator import WaterlineTranslator

pytestmark = pytest.mark.spark

RT, EMB = AssetKey(["f", "rt"]), AssetKey(["f", "emb"])


def test_checks_agree_with_the_engine_after_foreign_commits_and_log_cleanup(spark, tmp_path):
    feed_spec = make_feed(tmp_path)
    write_partition(tmp_path, "a", rows("a", 4))
    feed = Feed(feed_spec, spark=spark)
    feed.ingest("a")
    feed.release()
    before = {t: feed.status().tiers[t].w_us for t in feed_spec.tiers}

    for tier in feed_spec.tiers:
        path = feed_spec.tier_path(tier)
        _maintain(path)
        assert len(_clean_log(path)) == 1, "every commit file waterline wrote is gone"
        assert len(feed.waterline_history(tier).commits) == 0

    status = feed.status()
    assert {t: status.tiers[t].w_us for t in feed_spec.tiers} == before

    defs = definitions_from_specs([feed_spec])
    (tmp_path / "home").mkdir()
    instance = DagsterInstance.local_temp(tempdir=str(tmp_path / "home"))
    tiers = defs.get_assets_def(RT)
    checks = [c for c in defs.asset_checks if RT in {k.asset_key for k in c.check_keys}]
    result = materialize([tiers, *checks], instance=instance, resources={"waterline": defs.resources["waterline"]},
                         # the release proof says these commits are gone (tests/dagster/test_release_proof_check.py)
                         selection=AssetSelection.checks_for_assets(RT, EMB)
                         - AssetSelection.checks(*proof_check_keys(feed_spec, WaterlineTranslator())))
    assert result.success
    assert not result.get_asset_materialization_events()  # only the checks ran: no release moved W_T
    evaluations = {(e.asset_key, e.check_name): e for e in result.get_asset_check_evaluations()}
    assert set(evaluations) == {(k, n) for k in (RT, EMB)
                                for n in ("embargo_safety", "unique_identity", "monotonic_waterline")}
    assert all(e.passed for e in evaluations.values()), [e.description for e in evaluations.values()]
    for key, tier in ((RT, "rt"), (EMB, "emb")):
        embargo = evaluations[(key, "embargo_safety")].metadata
        assert embargo["W_T_us"].value == status.tiers[tier].w_us
        assert embargo["rows"].value == len(feed.read(tier))
        assert embargo["violations"].value == 0
    assert FOREIGN_COMMITS >= 60
