"""Issue 56 in Airflow: a live feed whose deployed spec retires a tier. On a real Airflow
(temporary AIRFLOW_HOME, SQLite, `airflow dags test`): the release task releases nothing and
skips with "spec not applied: ...", `<feed>_apply` applies the change, the next release
releases the tiers left; the retired tier keeps its table. The trigger and the task error
without Airflow's scheduler too."""

from __future__ import annotations

import asyncio
import logging

import pytest
import yaml
from airflow.sdk.exceptions import AirflowFailException

from tests.airflow.feed import FIRST_ROWS, TIERS, load, write_feed
from tests.airflow.home import AirflowHome
from tests.engine import live_change
from tests.engine.feedkit import make_spec
from tests.engine.live_change import LiveChange
from waterline import Feed
from waterline.airflow import WaterlineDueTrigger, airflow_failures
from waterline.airflow.triggers import IDLE
from waterline.errors import SpecNotApplied


def _changed(tmp_path):
    Feed(make_spec(tmp_path, TIERS)).apply()
    return make_spec(tmp_path, {"emb": TIERS["emb"]})  # d10 retired


def test_the_trigger_waits_for_an_unapplied_spec_and_goes_idle_with_the_line(tmp_path):
    spec = _changed(tmp_path)
    trigger = WaterlineDueTrigger(spec.to_dict(), base_dir=str(spec.base_dir), poll_seconds=0.1, idle_seconds=0.3)

    async def collect():
        return [event.payload async for event in trigger.run()]

    (event,) = asyncio.run(asyncio.wait_for(collect(), timeout=60))
    assert event["status"] == IDLE and event["reason"].startswith("spec not applied: feed f: the spec differs")
    assert "tier d10 retired" in event["reason"] and "waterline apply" in event["reason"]


def test_a_task_meeting_an_unapplied_spec_fails_with_the_one_line():
    with pytest.raises(AirflowFailException) as raised, airflow_failures(logging.getLogger("test")):
        raise SpecNotApplied("feed f: the spec differs from the applied spec (version 1): tier d10 retired; "
                             "run `waterline apply f.yaml` to make it take effect")
    assert str(raised.value).startswith("spec not applied: feed f: the spec differs") and "\n" not in str(raised.value)


@pytest.mark.spark
@pytest.mark.e2e
def test_the_apply_dag_applies_a_change_to_a_live_feed(spark, tmp_path):
    feeds = write_feed(tmp_path, lead_seconds=0)
    live = Feed(load(tmp_path), spark=spark)
    live.ingest("2026-01-05")
    live.release()
    kept = live.read("d10").to_pylist()
    data = yaml.safe_load((feeds / "f.yaml").read_text())
    data["tiers"] = {"emb": data["tiers"]["emb"]}  # the deployed file retires d10
    (feeds / "f.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    airflow = AirflowHome(tmp_path, feeds, dag_kwargs='release_options={"idle_seconds": 3}')
    airflow.migrate()

    skipped = airflow.cli("dags", "test", "f_release")
    out = skipped.stdout + skipped.stderr
    assert "spec not applied: feed f: the spec differs from the applied spec (version 1): tier d10 retired" in out
    assert airflow.task_tries("f_release")[-1][1] == "skipped", out[-3000:]

    applied = airflow.cli("dags", "test", "f_apply")
    out = applied.stdout + applied.stderr
    assert "feed f: spec version 2 applied: tier d10 retired" in out, out[-3000:]
    assert [a.version for a in live.spec_versions()] == [1, 2]

    rows = [*FIRST_ROWS, dict(FIRST_ROWS[0], id=4, v="after")]
    from tests.engine.feedkit import write_partition

    write_partition(tmp_path, "2026-01-05", rows)
    deployed = Feed(load(tmp_path), spark=spark)
    deployed.ingest("2026-01-05")
    airflow.cli("dags", "test", "f_release")
    assert airflow.task_tries("f_release")[-1][1] == "success"
    assert sorted(r["id"] for r in deployed.read("emb").to_pylist()) == [0, 4]
    assert live.read("d10").to_pylist() == kept  # retired: kept as of its last release


@pytest.mark.spark
@pytest.mark.e2e
def test_the_apply_dag_adds_a_tier_shortens_a_delay_and_adds_a_column(spark, tmp_path):
    """A live feed (rt, delayed 60 minutes) whose deployed spec shortens the delay to 10
    minutes, adds tier d25 and column venue: the release task skips with "spec not applied"
    naming the three changes; ``f_apply`` records version 2, builds d25 at the feed's W and
    adds venue to held and every tier; after an ingest filling venue, the release DAG releases
    a row the old delay held back and emits d25's asset event. Every tier equals `SpecHistory`."""
    from tests.airflow.home import spec_yaml
    from waterline.spec import load_spec

    run = LiveChange(tmp_path)
    path = spec_yaml(tmp_path / "feeds" / "f.yaml", live_change.spec_dict(tmp_path, deployed=False,
                                                                           release_lead_seconds=0))
    live = Feed(load_spec(path), spark=spark)
    run.ingest(live, {1: None, 2: None, 3: None})
    live.release()
    w1 = run.released(live)
    run.check(live)
    assert run.tier(live, "delayed") == {("a", 1): ("v1", None)}, "the scenario's rows: only row 1 due at 60 min"
    spec_yaml(path, live_change.spec_dict(tmp_path, deployed=True, release_lead_seconds=0))
    airflow = AirflowHome(tmp_path, path.parent, dag_kwargs='release_options={"idle_seconds": 3}')
    airflow.migrate()

    skipped = airflow.cli("dags", "test", "f_release")
    out = skipped.stdout + skipped.stderr
    assert "spec not applied: feed f: the spec differs from the applied spec (version 1)" in out, out[-3000:]
    assert all(change in out for change in live_change.CHANGES), out[-3000:]
    assert airflow.task_tries("f_release")[-1][1] == "skipped", out[-3000:]

    applied = airflow.cli("dags", "test", "f_apply")
    out = applied.stdout + applied.stderr
    assert "feed f: spec version 2 applied: tier d25 added; tier delayed: policy" in out, out[-3000:]
    feed = Feed(load_spec(path), spark=spark)
    run.applied(feed)
    assert [a.version for a in feed.spec_versions()] == [1, 2]
    for table in (feed.spec.held_path, *[feed.spec.tier_path(t) for t in feed.spec.tiers]):
        assert live_change.has_column(table, "venue"), table
    run.check(feed)  # d25 built at the feed's W, the others as released
    assert live_change.tier_w(feed, "d25") == w1

    run.ingest(feed, {1: "XNYS", 2: None, 3: "XLON"})
    released = airflow.cli("dags", "test", "f_release")
    assert airflow.task_tries("f_release")[-1][1] == "success", (released.stdout + released.stderr)[-3000:]
    w2 = run.released(feed)
    run.check(feed)
    assert ("a", 2) in run.tier(feed, "delayed") and w2 < run.event_us(2) + 60 * 60_000_000  # due by the new delay
    assert run.tier(feed, "rt")[("a", 3)] == ("v3", "XLON")
    assert airflow.asset_events()["f/d25"][-1]["w_us"] == w2
