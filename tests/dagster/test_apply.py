"""Issue 56 in Dagster: tier assets carry their policy's hash as code version, and ``<feed>_apply``
applies a deployed spec change to a live feed (real Dagster, Spark and Delta, in-process)."""

from __future__ import annotations

import pytest
from dagster import AssetKey, DagsterInstance, build_sensor_context

from tests.dagster.feeds import TIERS, rows, write_partition
from tests.engine.feedkit import make_spec

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
