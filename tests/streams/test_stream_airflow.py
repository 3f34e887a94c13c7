"""A stream feed in Airflow: ``airflow dags test`` of its ``<feed>_ingest`` DAG on a real
Airflow (temporary AIRFLOW_HOME, SQLite) drains the topic from the real broker with real
Spark, releases both tiers in the same task, and records the offsets reached on the held
asset's event; the next run resumes from the checkpoint in the warehouse and drains only
what was produced since (a revision and a tombstone among it)."""

from __future__ import annotations

import pytest

from tests.airflow.home import AirflowHome
from tests.streams.kafkakit import DAY, HOUR, iso, new_topic, produce, stream_spec
from waterline import load

pytestmark = [pytest.mark.spark, pytest.mark.e2e, pytest.mark.heavy(2)]


def _tier(spec, spark, tier: str) -> dict[str, float]:
    return {r["id"]: r["px"] for r in load(spec, spark=spark).read(tier, columns=["id", "px"]).to_pylist()}


def test_the_ingest_dag_of_a_stream_feed_drains_the_topic_and_the_next_run_resumes(kafka, spark, tmp_path):
    topic = new_topic(kafka.bootstrap, partitions=2)
    feeds = tmp_path / "feeds"
    feeds.mkdir()
    spec = stream_spec(feeds, kafka.bootstrap, topic, extra={"warehouse": str(tmp_path / "warehouse")})
    produce(kafka.bootstrap, topic, [(0, "a", {"px": 1.0, "ts": iso(DAY)}), (1, "b", {"px": 2.0, "ts": iso(DAY)}),
                                     (0, "a", {"px": 1.5, "ts": iso(DAY + HOUR)})])
    airflow = AirflowHome(tmp_path, feeds)
    airflow.migrate()

    first = airflow.cli("dags", "test", "quotes_ingest")
    out = first.stdout + first.stderr
    assert "quotes/source batch 0: read 3 records, wrote 2 versions (2 new" in out, out[-4000:]
    assert airflow.task_tries("quotes_ingest") == [(1, "success")]
    assert _tier(spec, spark, "realtime") == {"a": 1.5, "b": 2.0}
    assert _tier(spec, spark, "delayed_15m") == {"a": 1.5, "b": 2.0}  # event times of 2026-01-05: long due

    # The next run (a scheduled minute later, or a retry on another worker) resumes from the
    # checkpoint in the warehouse: the revision of b and the tombstone of a, nothing replayed.
    produce(kafka.bootstrap, topic, [(1, "b", {"px": 2.5, "ts": iso(DAY)}), (0, "a", None),
                                     (1, "c", {"px": 3.0, "ts": iso(DAY)})])
    second = airflow.cli("dags", "test", "quotes_ingest", "2026-11-27T00:01:00+00:00")
    out = second.stdout + second.stderr
    assert "read 3 records, wrote 3 versions (1 new, 1 changed, 1 removed)" in out, out[-4000:]
    assert "batch 0:" not in out, out[-4000:]
    assert [state for _, state in airflow.task_tries("quotes_ingest")] == ["success", "success"]
    for tier in ("realtime", "delayed_15m"):
        assert _tier(spec, spark, tier) == {"b": 2.5, "c": 3.0}, tier

    events = airflow.asset_events()["quotes/held"]
    assert [e["offsets"] for e in events] == [{"source": {topic: {"0": 2, "1": 1}}},
                                              {"source": {topic: {"0": 3, "1": 3}}}]
    assert [e["versions_written"] for e in events] == [2, 3]
    assert events[1]["seq"] > events[0]["seq"]
