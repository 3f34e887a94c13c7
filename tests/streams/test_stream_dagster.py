"""A stream feed in Dagster: ``[feed, "held"]`` is not partitioned; materializing it drains
the topic (real Dagster `materialize`, real broker, real Spark), its metadata the batches and
the offsets reached; the real-time tier is released in the same run."""

from __future__ import annotations

from dagster import AssetKey, DagsterInstance, materialize

from tests.streams.kafkakit import iso, new_topic, produce, stream_spec
from waterline import load
from waterline.spec import load_spec

DAY = 1_767_571_200_000_000


def test_materializing_a_stream_feeds_held_asset_drains_the_topic(kafka, spark, tmp_path):
    from waterline.dagster import definitions_from_specs

    topic = new_topic(kafka.bootstrap)
    produce(kafka.bootstrap, topic, [(0, "a", {"px": 1.0, "ts": iso(DAY)}), (0, "b", {"px": 2.0, "ts": iso(DAY)}),
                                     (0, "a", {"px": 1.5, "ts": iso(DAY)})])
    path = stream_spec(tmp_path, kafka.bootstrap, topic)
    defs = definitions_from_specs([load_spec(path)])
    held = defs.get_assets_def(AssetKey(["quotes", "held"]))
    assert held.partitions_def is None
    home = tmp_path / "dagster_home"
    home.mkdir()
    result = materialize([held], instance=DagsterInstance.local_temp(tempdir=str(home)),
                         resources={"waterline": defs.resources["waterline"]})
    assert result.success
    [m] = [e.event_specific_data.materialization for e in result.all_events
           if e.event_type_value == "ASSET_MATERIALIZATION"]
    meta = {k: v.value for k, v in m.metadata.items()}
    assert (meta["batches"], meta["records"], meta["versions_written"], meta["releases"]) == (1, 3, 2, 1)
    assert meta["offsets"] == {"source": {topic: {"0": 3}}}  # per source: the next offset of each partition
    rows = load(path, spark=spark).read("realtime", columns=["id", "px"]).to_pylist()
    assert sorted((r["id"], r["px"]) for r in rows) == [("a", 1.5), ("b", 2.0)]
