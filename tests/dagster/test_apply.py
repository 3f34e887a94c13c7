"""Issue 56 in Dagster: tier assets carry their policy's hash as code version, and ``<feed>_apply``
applies a deployed spec change to a live feed (real Dagster, Spark and Delta, in-process)."""

from __future__ import annotations

import pytest
from dagster import AssetKey, DagsterInstance, build_sensor_context

from tests.dagster.feeds import TIERS, rows, write_partition
from tests.engine.feedkit import make_spec
from tests.engine.live_change import CHANGES, LiveChange, has_column, spec_dict, tier_w

RT, EMB = AssetKey(["f", "rt"]), AssetKey(["f", "emb"])


def _code_versions(spec) -> dict:
    from waterline.dagster import definitions_from_specs

    graph = definitions_from_specs([spec]).get_repository_def().asset_graph
    return {key: graph.get(key).code_version for key in graph.get_all_asset_keys() if graph.get(key).is_materializable}


def test_a_tier_code_version_is_its_normalised_policy(tmp_path):
    """No JVM: a reformatted policy keeps the code version, a changed one changes it, the held
    table has none."""
    base = _code_versions(make_spec(tmp_path, TIERS))
    reformatted = _code_versions(make_spec(tmp_path, {"rt": "true", "emb": "embargo_until  <=  waterline()"}))
    changed = _code_versions(make_spec(tmp_path, {**TIERS, "emb": "embargo_until <= WATERLINE() - INTERVAL 1 DAY"}))
    assert base[RT] and base[EMB] and base[RT] != base[EMB] and base[AssetKey(["f", "held"])] is None
    assert reformatted == base
    assert changed[RT] == base[RT] and changed[EMB] != base[EMB]


@pytest.mark.spark
def test_the_apply_job_applies_a_change_to_a_live_feed(spark, tmp_path):
    """A live feed (ingested, released) whose deployed spec retires a tier: the sensor skips
    with "spec not applied", ``f_apply`` records version 2 under the lease, then the sensor
    asks for a release and the release job releases the tiers left; the retired tier's table
    stays as it was."""
    from waterline import Feed
    from waterline.dagster import definitions_from_specs

    live = make_spec(tmp_path, TIERS, release_interval_seconds=1)
    write_partition(tmp_path, "a", rows("a"))
    feed = Feed(live, spark=spark)
    feed.ingest("a")
    feed.release()
    kept = feed.read("emb").to_pylist()

    deployed = make_spec(tmp_path, {"rt": "TRUE"}, release_interval_seconds=1)
    defs = definitions_from_specs([deployed])
    instance = DagsterInstance.ephemeral()
    sensor = defs.get_sensor_def("f_release_sensor")
    skipped = sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs))
    assert not skipped.run_requests and skipped.skip_message.startswith("spec not applied: ")
    assert "tier emb retired" in skipped.skip_message

    resources = {"waterline": defs.resources["waterline"]}
    applied = defs.get_job_def("f_apply").execute_in_process(instance=instance, resources=resources)
    assert applied.success
    [output] = [e for e in applied.all_events if e.event_type_value == "STEP_OUTPUT"]
    metadata = {k: v.value for k, v in output.event_specific_data.metadata.items()}
    assert metadata["spec version"] == 2 and "tier emb retired" in metadata["changes"]
    assert [a.version for a in feed.spec_versions()] == [1, 2]

    write_partition(tmp_path, "a", rows("a", n=3))
    Feed(deployed, spark=spark).ingest("a")
    ticked = sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs))
    assert ticked.run_requests, ticked.skip_message
    released = defs.get_job_def("f_release").execute_in_process(instance=instance, resources=resources)
    assert released.success
    assert len(Feed(deployed, spark=spark).read("rt")) == 3 and feed.read("emb").to_pylist() == kept
    again = defs.get_job_def("f_apply").execute_in_process(instance=instance, resources=resources)
    assert again.success and feed.spec_versions()[-1].version == 2  # nothing to apply: nothing recorded


@pytest.mark.spark
def test_the_apply_job_adds_a_tier_shortens_a_delay_and_adds_a_column(spark, tmp_path):
    """A live feed (rt, delayed 60 minutes; ingested, released) whose deployed spec shortens the
    delay to 10 minutes, adds tier d25 and column venue: the definitions show d25's asset and
    delayed's new code version; the sensor skips with "spec not applied" naming the three
    changes; ``f_apply`` records version 2, builds d25 at the feed's W and adds venue to held
    and every tier; after an ingest filling venue, the release job releases a row the old
    delay held back. Every tier equals `SpecHistory` after each step."""
    from waterline import Feed
    from waterline.dagster import definitions_from_specs
    from waterline.spec import spec_from_dict

    run = LiveChange(tmp_path)
    live = Feed(spec_from_dict(spec_dict(tmp_path, deployed=False), base_dir=tmp_path), spark=spark)
    run.ingest(live, {1: None, 2: None, 3: None})
    live.release()
    w1 = run.released(live)
    run.check(live)
    assert run.tier(live, "delayed") == {("a", 1): ("v1", None)}, "the scenario's rows: only row 1 due at 60 min"

    deployed = spec_from_dict(spec_dict(tmp_path, deployed=True), base_dir=tmp_path)
    before, after = _code_versions(live.spec), _code_versions(deployed)
    d25, delayed = AssetKey(["f", "d25"]), AssetKey(["f", "delayed"])
    assert d25 not in before and after[d25] and after[delayed] != before[delayed]
    assert after[AssetKey(["f", "rt"])] == before[AssetKey(["f", "rt"])]
    defs = definitions_from_specs([deployed])
    instance = DagsterInstance.ephemeral()
    sensor = defs.get_sensor_def("f_release_sensor")
    skipped = sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs))
    assert not skipped.run_requests and skipped.skip_message.startswith("spec not applied: ")
    assert all(change in skipped.skip_message for change in CHANGES), skipped.skip_message

    resources = {"waterline": defs.resources["waterline"]}
    applied = defs.get_job_def("f_apply").execute_in_process(instance=instance, resources=resources)
    assert applied.success
    [output] = [e for e in applied.all_events if e.event_type_value == "STEP_OUTPUT"]
    metadata = {k: v.value for k, v in output.event_specific_data.metadata.items()}
    assert metadata["spec version"] == 2 and all(change in metadata["changes"] for change in CHANGES)
    feed = Feed(deployed, spark=spark)
    run.applied(feed)
    assert [a.version for a in feed.spec_versions()] == [1, 2]
    for path in (deployed.held_path, *[deployed.tier_path(t) for t in deployed.tiers]):
        assert has_column(path, "venue"), path
    run.check(feed)  # d25 built at the feed's W, the others as released
    assert tier_w(feed, "d25") == w1

    run.ingest(feed, {1: "XNYS", 2: None, 3: "XLON"})
    ticked = sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs))
    assert ticked.run_requests, ticked.skip_message
    released = defs.get_job_def("f_release").execute_in_process(instance=instance, resources=resources)
    assert released.success
    w2 = run.released(feed)
    run.check(feed)
    assert ("a", 2) in run.tier(feed, "delayed") and w2 < run.event_us(2) + 60 * 60_000_000  # due by the new delay
    assert run.tier(feed, "rt")[("a", 3)] == ("v3", "XLON")
    assert instance.get_latest_materialization_event(d25) is not None
    shown = spark.read.format("delta").load(deployed.tier_path("rt")).select("id", "venue").collect()
    assert sorted((r.id, r.venue) for r in shown) == [(1, "XNYS"), (2, None), (3, "XLON")]

