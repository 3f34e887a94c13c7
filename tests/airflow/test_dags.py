"""The DAGs `dags_from_specs` builds, parsed by Airflow's own DagBag (no Spark, no database)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.airflow.home import REPO

UTC = timezone.utc


def _demo_specs():
    from waterline.spec import load_spec

    return {p.stem: load_spec(p, base_dir=REPO) for p in sorted((REPO / "dags" / "feeds").glob("*.yaml"))}


def test_the_demo_dag_file_parses_into_an_ingest_a_release_and_a_maintain_dag_per_feed():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert bag.import_errors == {}
    assert sorted(bag.dag_ids) == ["indicators_apply", "indicators_audit", "indicators_ingest", "indicators_maintain",
                                   "indicators_release", "ticks_apply", "ticks_audit", "ticks_ingest", "ticks_maintain",
                                   "ticks_release"]
    applying = bag.dags["ticks_apply"]
    assert [t.task_id for t in applying.tasks] == ["apply"] and type(applying.timetable).__name__ == "NullTimetable"
    assert applying.is_paused_upon_creation is False
    audit = bag.dags["ticks_audit"]
    assert [t.task_id for t in audit.tasks] == ["audit"] and audit.timetable.expression == "0 * * * *"
    ingest, release = bag.dags["ticks_ingest"], bag.dags["ticks_release"]
    assert [t.task_id for t in ingest.tasks] == ["ingest"] and [t.task_id for t in release.tasks] == ["release"]
    maintain = bag.dags["ticks_maintain"]
    assert [t.task_id for t in maintain.tasks] == ["maintain"] and maintain.max_active_runs == 1
    assert type(maintain.timetable).__name__ == "CronTriggerTimetable"
    assert maintain.timetable.expression == "0 * * * *"  # the spec's default maintenance.every: hourly
    assert type(release.timetable).__name__ == "ContinuousTimetable" and release.max_active_runs == 1
    spec = _demo_specs()["ticks"]
    assert ingest.start_date == datetime.strptime(spec.partitions.start, "%Y-%m-%d").replace(tzinfo=UTC)
    assert [a.name for a in release.tasks[0].outlets] == [f"ticks/{tier}" for tier in spec.tiers]
    assert [a.name for a in ingest.tasks[0].outlets] == ["ticks/held"]


def test_assets_name_the_delta_tables():
    from waterline.airflow import held_asset, tier_asset

    spec = _demo_specs()["indicators"]
    assert tier_asset(spec, "public").uri == Path(spec.tier_path("public")).as_uri()
    assert held_asset(spec).uri == Path(spec.held_path).as_uri()
    assert tier_asset(spec, "public").extra["waterline/policy"] == spec.tiers["public"]
    with pytest.raises(KeyError, match="unknown tier 'nope'"):
        tier_asset(spec, "nope")


def test_the_trigger_serialises_to_a_spec_the_triggerer_can_rebuild():
    from waterline.airflow import WaterlineDueTrigger
    from waterline.spec import spec_from_dict

    spec = _demo_specs()["indicators"]
    trigger = WaterlineDueTrigger(spec.to_dict(), base_dir=str(REPO), poll_seconds=2)
    path, kwargs = trigger.serialize()
    assert path == "waterline.airflow.triggers.WaterlineDueTrigger"
    rebuilt = WaterlineDueTrigger(**kwargs)
    assert spec_from_dict(rebuilt.spec, base_dir=rebuilt.base_dir) == spec
    # kwargs go through Airflow's own serialiser into the database
    from airflow.serialization.serialized_objects import BaseSerialization

    assert BaseSerialization.deserialize(BaseSerialization.serialize(kwargs)) == kwargs


def test_importing_the_integration_starts_no_spark():
    import subprocess
    import sys

    code = ("import sys, waterline.airflow, waterline.airflow.triggers; "
            "assert 'pyspark' not in sys.modules, sorted(m for m in sys.modules if 'spark' in m)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_bad_spec_is_the_dag_files_import_error_naming_the_key_at_fault(tmp_path):
    from airflow.dag_processing.dagbag import DagBag

    from tests.airflow.home import DAG_FILE, spec_yaml
    from tests.engine.feedkit import spec_dict

    spec_yaml(tmp_path / "feeds" / "f.yaml", spec_dict(tmp_path, {"emb": "embargo_until = WATERLINE()"}))
    (tmp_path / "dags").mkdir()
    (tmp_path / "dags" / "feeds.py").write_text(DAG_FILE.format(feeds=str(tmp_path / "feeds"), extra="", code=""))
    bag = DagBag(dag_folder=str(tmp_path / "dags"))
    assert bag.dag_ids == []
    (error,) = bag.import_errors.values()
    last = error.strip().splitlines()[-1]
    assert "tiers.emb" in last and "embargo_until = WATERLINE()" in last, error[-2000:]


@pytest.mark.parametrize(("kind", "start", "end"), [("daily", "2026-01-05", "2026-01-08"),
                                                     ("hourly", "2026-01-05-22:00", "2026-01-06-02:00")])
def test_catchup_runs_are_the_schemes_partitions_once_each(kind, start, end):
    """The scheduler's own run sequence (the core timetable, catchup on, the DAG's start and
    end dates) gives one run per partition from the scheme's start to its end, no more."""
    from dataclasses import replace

    from airflow.serialization.encoders import coerce_to_core_timetable
    from airflow.timetables.base import TimeRestriction

    from waterline.airflow import dags_from_specs, partitions_in_interval
    from waterline.spec import PartitionScheme

    scheme = PartitionScheme(kind=kind, start=start, end=end)
    spec = replace(_demo_specs()["ticks"], partitions=scheme)
    dag = dags_from_specs(spec, catchup=True)["ticks_ingest"]
    assert dag.catchup is True
    timetable = coerce_to_core_timetable(dag.timetable)
    restriction = TimeRestriction(earliest=dag.start_date, latest=dag.end_date, catchup=True)
    runs, last = [], None
    while (info := timetable.next_dagrun_info(last_automated_data_interval=last, restriction=restriction)) is not None:
        runs.append(partitions_in_interval(spec, info.data_interval.start, info.data_interval.end))
        last = info.data_interval
        assert len(runs) < 100
    keys = [key for run in runs for key in run]
    assert all(len(run) == 1 for run in runs) and keys[0] == start and keys[-1] == end
    assert len(keys) == len(set(keys)) == (4 if kind == "daily" else 5)


def test_tasks_retry_transient_failures_and_use_the_hooks_connection():
    """`dags_from_specs` gives each task two retries 30 s apart (a busy or lost lease, a lost commit
    race pass; a `WaterlineError` fails at once whatever ``retries`` says), under the caller's
    ``default_args``, and the `WaterlineHook` connection id."""
    from datetime import timedelta

    from waterline.airflow import dags_from_specs

    spec = _demo_specs()["ticks"]
    for dag in dags_from_specs(spec).values():
        (task,) = dag.tasks
        assert (task.retries, task.retry_delay, task.waterline_conn_id) == (2, timedelta(seconds=30), "waterline_default")
    for dag in dags_from_specs(spec, default_args={"retry_delay": 5}, waterline_conn_id="wl_prod").values():
        (task,) = dag.tasks
        assert (task.retries, task.retry_delay, task.waterline_conn_id) == (2, timedelta(seconds=5), "wl_prod")
        assert task.hook.waterline_conn_id == "wl_prod"


def test_a_stream_feeds_ingest_dag_drains_its_topics_with_the_stream_operator(tmp_path):
    """A stream feed's ``<feed>_ingest`` has no partitions: one task, `WaterlineStreamOperator`,
    every minute, the held asset its outlet; its release DAG is the same as any feed's."""
    from tests.streams.kafkakit import stream_spec
    from waterline.airflow import dags_from_specs
    from waterline.airflow.assets import held_asset
    from waterline.airflow.operators import WaterlineStreamOperator
    from waterline.spec import load_spec

    spec = load_spec(stream_spec(tmp_path, "127.0.0.1:9092", "quotes"))
    dags = dags_from_specs(spec)
    ingest = dags["quotes_ingest"]
    [task] = ingest.tasks
    assert isinstance(task, WaterlineStreamOperator) and task.task_id == "stream"
    assert task.outlets == [held_asset(spec)]
    assert ingest.schedule == timedelta(minutes=1) and not ingest.catchup
    assert "Drain the Kafka topics of feed quotes" in ingest.description
