"""The Dagster definitions, executed in-process against real Spark and Delta.

One small feed (static partitions a, b, c; tiers rt = TRUE and emb = embargo)
goes through: ingest of a partition range with materialize() (a single-run
backfill), the sensor deciding, the release job with its checks, and an early
row injected into a tier table making the embargo check fail.
"""

from __future__ import annotations

import json

import pytest
from dagster import (
    AssetCheckKey,
    AssetKey,
    DagsterInstance,
    RunRequest,
    build_sensor_context,
    materialize,
)

from tests.dagster.feeds import rows, spec as make_feed, write_partition

pytestmark = pytest.mark.spark

HELD, RT, EMB = AssetKey(["f", "held"]), AssetKey(["f", "rt"]), AssetKey(["f", "emb"])


@pytest.fixture(scope="module")
def env(spark, tmp_path_factory):
    from waterline.dagster import definitions_from_specs

    root = tmp_path_factory.mktemp("inproc")
    feed = make_feed(root)
    for partition in "abc":
        write_partition(root, partition, rows(partition))
    defs = definitions_from_specs([feed])
    home = root / "dagster_home"
    home.mkdir()
    instance = DagsterInstance.local_temp(tempdir=str(home))
    return {"root": root, "spec": feed, "defs": defs, "instance": instance, "cursor": None}


def _materializations(result, key):
    return [
        e.event_specific_data.materialization for e in result.all_events
        if e.event_type_value == "ASSET_MATERIALIZATION" and e.event_specific_data.materialization.asset_key == key
    ]


def _meta(materialization, name):
    return materialization.metadata[name].value


def _tick(env):
    sensor = env["defs"].get_sensor_def("f_release_sensor")
    context = build_sensor_context(instance=env["instance"], cursor=env["cursor"], definitions=env["defs"])
    result = sensor.evaluate_tick(context)
    env["cursor"] = result.cursor
    return result


def test_sensor_skips_before_any_ingest(env):
    result = _tick(env)
    assert not result.run_requests
    assert "nothing due" in result.skip_message and "nothing ingested yet" in result.skip_message


def test_materialize_partition_range_in_one_run(env):
    """materialize() over the range a...b: one run ingests both keys, in order (single-run backfill)."""
    defs, instance = env["defs"], env["instance"]
    held = defs.get_assets_def(HELD)
    result = materialize(
        [held], instance=instance, resources={"waterline": defs.resources["waterline"]},
        tags={"dagster/asset_partition_range_start": "a", "dagster/asset_partition_range_end": "b"},
    )
    assert result.success
    materializations = _materializations(result, HELD)
    assert sorted(m.partition for m in materializations) == ["a", "b"]
    m = materializations[0]
    assert _meta(m, "partitions") == "a, b"
    assert _meta(m, "rows_read") == 4
    assert _meta(m, "versions_written") == 4
    assert _meta(m, "unchanged") == 0 and _meta(m, "removals") == 0 and _meta(m, "quarantined") == 0
    assert _meta(m, "pending") == 4
    assert _meta(m, "dagster/row_count") == 4  # held versions of partitions a and b
    assert _meta(m, "dagster/uri") == env["spec"].held_path
    columns = [c.name for c in _meta(m, "dagster/column_schema").columns]
    assert columns[:5] == ["id", "event_time", "status", "embargo_until", "v"] and "_wl_seq" in columns
    assert isinstance(_meta(m, "next_due"), float)
    assert set(_meta(m, "per_partition")) == {"a", "b"}
    assert _meta(m, "per_partition")["a"]["versions_written"] == 2


def test_sensor_requests_one_release_per_due_moment(env):
    from waterline.engine.tables.status import read_feed_status

    state = read_feed_status(env["spec"])
    first = _tick(env)
    (request,) = first.run_requests
    assert isinstance(request, RunRequest)
    assert request.run_key.startswith(f"f:{state.seq}:")
    assert json.loads(first.cursor)["run_key"] == request.run_key
    again = _tick(env)  # nothing landed yet: the same due moment launches nothing more
    assert not again.run_requests
    assert "already requested" in again.skip_message


def test_release_job_materializes_tiers_and_checks_pass(env):
    defs, instance, feed = env["defs"], env["instance"], env["spec"]
    result = defs.get_job_def("f_release").execute_in_process(instance=instance)
    assert result.success
    rt, emb = _materializations(result, RT)[0], _materializations(result, EMB)[0]
    from waterline.engine.delta.table_log import TableLog
    from waterline.engine.tables import feed_tables

    w = feed_tables.tier_state(TableLog.open(feed.tier_path("emb"))).w
    assert emb.tags["dagster/data_version"] == str(w)
    assert _meta(emb, "W_T") == pytest.approx(w / 1e6)
    assert _meta(rt, "released") == 4 and _meta(emb, "released") == 2  # odd ids wait for 2099
    assert _meta(emb, "held") is False and _meta(emb, "lag_seconds") >= 0
    assert _meta(emb, "dagster/row_count") == 2
    evaluations = result.get_asset_check_evaluations()
    assert {(e.asset_key, e.check_name) for e in evaluations} == {
        (k, n) for k in (RT, EMB) for n in ("embargo_safety", "unique_identity", "monotonic_waterline")
    }
    assert all(e.passed for e in evaluations), [(e.check_name, e.description) for e in evaluations if not e.passed]

    after = _tick(env)
    assert not after.run_requests
    assert "nothing due; next due 2099-01-05T11:00:00Z (tier emb)" in after.skip_message


TICK_SCRIPT = r"""
import json, statistics, sys, time
import psutil
from dagster import build_sensor_context
from waterline.dagster.sensors import build_release_sensor
from waterline.spec import spec_from_dict
from waterline.engine.tables import feed_tables

spec = spec_from_dict(json.loads(sys.argv[1]))
sensor = build_release_sensor(spec)
me = psutil.Process()
times, java, cursor, messages = [], [], None, set()
for _ in range(int(sys.argv[2])):
    context = build_sensor_context(cursor=cursor)
    start = time.perf_counter()
    result = sensor.evaluate_tick(context)
    times.append((time.perf_counter() - start) * 1000)
    cursor = result.cursor
    messages.add(result.skip_message or "run requested")
    java += [c.name() for c in me.children(recursive=True) if "java" in c.name().lower()]
print(json.dumps({
    "median_ms": statistics.median(times), "max_ms": max(times), "times_ms": times,
    "java_children": java, "pyspark_imported": "pyspark" in sys.modules,
    "py4j_imported": "py4j" in sys.modules, "messages": sorted(messages),
}))
"""


def test_sensor_tick_is_cheap_and_starts_no_jvm(env):
    """20 ticks in a fresh interpreter that never imports pyspark: median < 100 ms, no Java child."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", TICK_SCRIPT, json.dumps(env["spec"].to_dict()), "20"],
        capture_output=True, text=True, timeout=300, cwd=str(env["root"]),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"sensor tick: median {report['median_ms']:.1f} ms, max {report['max_ms']:.1f} ms over 20 ticks")
    assert report["java_children"] == []
    assert report["pyspark_imported"] is False and report["py4j_imported"] is False
    assert report["messages"] == ["nothing due; next due 2099-01-05T11:00:00Z (tier emb)"]
    assert report["median_ms"] < 100, report["times_ms"]


def test_quarantine_check_warns_on_held(env):
    defs = env["defs"]
    check = defs.get_asset_checks_def(AssetCheckKey(HELD, "quarantine_empty"))
    assert check is not None
    from waterline.dagster.checks import quarantine_result

    assert quarantine_result(env["spec"]).passed  # nothing quarantined in this feed


def test_injected_early_row_fails_embargo_check(env, spark):
    defs, instance, feed = env["defs"], env["instance"], env["spec"]
    tier = spark.read.format("delta").load(feed.tier_path("emb"))
    early = spark.createDataFrame(
        [(999, "final", "x", "a", 1)], "id BIGINT, status STRING, v STRING, _wl_partition STRING, _wl_seq BIGINT"
    ).selectExpr(
        "id", "TIMESTAMP'2026-01-05 10:00:00' AS event_time", "status",
        "TIMESTAMP'2099-01-05 11:00:00' AS embargo_until", "v", "_wl_partition", "_wl_seq",
        "CAST(4102398000000000 AS BIGINT) AS _wl_start", "CAST(9223372036854775807 AS BIGINT) AS _wl_end",
    ).select(*tier.columns)
    early.write.format("delta").mode("append").save(feed.tier_path("emb"))

    # The checks alone, as the UI's "Execute checks" runs them: the tier as the other writer left it.
    checks = {AssetCheckKey(key, name) for key in (RT, EMB) for name in ("embargo_safety", "unique_identity")}
    only_checks = defs.resolve_implicit_global_asset_job_def().get_subset(
        asset_selection=set(), asset_check_selection=checks)
    result = only_checks.execute_in_process(instance=instance, raise_on_error=False)
    evaluations = {(e.asset_key, e.check_name): e for e in result.get_asset_check_evaluations()}
    embargo = evaluations[(EMB, "embargo_safety")]
    assert not embargo.passed
    assert embargo.metadata["violations"].value == 1
    assert embargo.metadata["early_rows"].value == [["a", 999]]
    assert evaluations[(RT, "embargo_safety")].passed
    assert evaluations[(EMB, "unique_identity")].passed

    # The next release sees a row no waterline commit wrote and reconciles the tier to the semantics.
    result = defs.get_job_def("f_release").execute_in_process(instance=instance, raise_on_error=False)
    evaluations = {(e.asset_key, e.check_name): e for e in result.get_asset_check_evaluations()}
    assert evaluations[(EMB, "embargo_safety")].passed
    assert 999 not in {r.id for r in spark.read.format("delta").load(feed.tier_path("emb")).collect()}


def test_a_prearmed_run_waits_then_releases_the_moments_that_follow(spark, tmp_path):
    """The release job with the sensor's due tag: it waits for the moment, releases it and the
    next one within the lead time, each when due, and reports the worst lag and the count."""
    from waterline.clock import SystemClock, format_instant
    from waterline.dagster import definitions_from_specs
    from waterline.dagster.sensors import DUE_TAG
    from waterline.engine.proof.timeliness import appearances
    from tests.engine.feedkit import _micros
    from waterline import Feed


    feed = make_feed(tmp_path, release_lead_seconds=600)  # covers the gap however slow the machine

    def ingest_due(dues):
        write_partition(tmp_path, "a", [
            {"id": i, "event_time": PAST_EVENT, "status": "final", "embargo_until": format_instant(due), "v": "x"}
            for i, due in dues.items()
        ])
        started = SystemClock().now_us()
        Feed(feed, spark=spark).ingest("a")
        return SystemClock().now_us() - started

    # The moments must still be ahead when the run starts: space them by what an ingest takes here.
    took = ingest_due({2: SystemClock().now_us() + 3_600_000_000})
    now, step = SystemClock().now_us(), max(3_000_000, 2 * took)
    dues = {0: now + 2 * step, 1: now + 3 * step, 2: now + 3_600_000_000}
    ingest_due(dues)
    defs = definitions_from_specs([feed])
    (tmp_path / "home").mkdir()
    instance = DagsterInstance.local_temp(tempdir=str(tmp_path / "home"))
    result = defs.get_job_def("f_release").execute_in_process(instance=instance, tags={DUE_TAG: str(dues[0])})
    assert result.success
    emb = _materializations(result, EMB)[0]
    assert _meta(emb, "released") == 2 and _meta(emb, "waterline/due_moments_released") == 2
    assert _meta(emb, "waterline/release_lag_seconds") >= 0
    seen = appearances(feed, "emb", lambda r: _micros(r["embargo_until"]))
    assert sorted(a.row["id"] for a in seen) == [0, 1]
    assert not any(a.early for a in seen)
    assert len({a.commit_us for a in seen}) == 2  # two releases, one per moment


PAST_EVENT = "2026-01-05 10:00:00"


def test_an_ingest_failing_on_bad_data_fails_the_step_with_the_cli_one_line_message(spark, tmp_path):
    from waterline.dagster import definitions_from_specs

    feed = make_feed(tmp_path, transform="SELECT id, CAST(event_time AS TIMESTAMP) AS event_time, status, "
                                         "CAST(embargo_until AS TIMESTAMP) AS embargo_until, v FROM source")
    write_partition(tmp_path, "a", [dict(rows("a")[0], event_time="not a time")])
    defs = definitions_from_specs([feed])
    (tmp_path / "home").mkdir()
    instance = DagsterInstance.local_temp(tempdir=str(tmp_path / "home"))
    result = materialize([defs.get_assets_def(HELD)], instance=instance, partition_key="a",
                         resources={"waterline": defs.resources["waterline"]}, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").step_failure_data
    description = failure.user_failure_data.description
    assert description.startswith("feed f: partition a: [CAST_INVALID_INPUT]"), description
    assert "\n" not in description and "hint: use try_cast" in description


def test_the_maintain_job_keeps_the_tables_and_runs_hourly(spark, tmp_path):
    """``f_maintain`` (scheduled by ``f_maintain_schedule``) runs `Feed.maintain` in-process: each
    tier's releases leave one file per partition after it, its rows untouched."""
    from waterline import Feed
    from waterline.dagster import definitions_from_specs

    feed_spec = make_feed(tmp_path)
    for partition in "ab":
        write_partition(tmp_path, partition, rows(partition))
    feed = Feed(feed_spec, spark=spark)
    feed.ingest("a")
    feed.release()
    feed.ingest("b")
    feed.release()
    write_partition(tmp_path, "a", [*rows("a"), *rows("c")])  # more rows of partition a: a second file there
    feed.ingest("a")
    feed.release()
    before = feed.read("rt").sort_by("id").to_pylist()
    defs = definitions_from_specs([feed_spec])
    schedule = defs.get_schedule_def("f_maintain_schedule")
    assert schedule.cron_schedule == "0 * * * *" and schedule.job_name == "f_maintain"
    result = defs.get_job_def("f_maintain").execute_in_process(
        instance=DagsterInstance.ephemeral(), resources={"waterline": defs.resources["waterline"]})
    assert result.success
    [output] = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    metadata = {k: v.value for k, v in output.event_specific_data.metadata.items()}
    assert metadata["rt compacted"] >= 2 and metadata["rt files"] == 2  # partitions a and b
    assert feed.read("rt").sort_by("id").to_pylist() == before
