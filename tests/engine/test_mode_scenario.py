"""One ingest / revise / release / gc story against a Spark cluster or a Spark Connect server.

Runs only when WATERLINE_SPARK_MASTER (a non-local master) or WATERLINE_SPARK_REMOTE
is set: `tests/engine/test_spark_modes.py` runs this module (and the differential
test) in a subprocess per mode against the servers it starts. Every tier must
equal `waterline.semantics` after every release, the state must land in the
commits (userMetadata), and a calendar-function tier must work there too.
"""

from __future__ import annotations

import os

import pytest

from tests.engine import model
from tests.engine.feedkit import PAYLOAD, far_future_clock, local_reads, make_spec, read_tier, write_partition
from tests.engine.model import MINUTE, POLICIES, FeedModel, expected_tier

REMOTE = os.environ.get("WATERLINE_SPARK_REMOTE")
MASTER = os.environ.get("WATERLINE_SPARK_MASTER", "local")
pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(not REMOTE and MASTER.startswith("local"), reason="needs a cluster or Connect server"),
]

BASE_US = 1_767_261_600_000_000  # 2026-01-01T10:00:00Z, a Thursday (New Year's Day: NYSE closed)
CALENDAR_POLICY = "wl_next_business_time(event_time, '08:30', 'America/New_York', 'XLON') <= WATERLINE()"
TIERS = {"d10": POLICIES["d10"], "mixed": POLICIES["mixed"], "emb": POLICIES["emb"], "cal": CALENDAR_POLICY}


def _vis(tier, row):
    from waterline.clock import next_business_time
    from waterline.semantics import branch_interval, visibility

    if tier != "cal":
        return _python_vis(tier, row)
    due = next_business_time(row["event_time"], "08:30", "America/New_York", "XLON")
    return visibility([branch_interval(True, [(due, False)], [])])


_python_vis = model.python_vis


def _iso(us):
    from waterline.clock import format_instant

    return format_instant(us).replace("T", " ").rstrip("Z")


def _source(row):
    return {**row, "event_time": _iso(row["event_time"]),
            "embargo_until": None if row["embargo_until"] is None else _iso(row["embargo_until"])}


def test_ingest_revise_release_equals_the_oracle(spark, tmp_path, monkeypatch):
    from waterline import Feed
    from waterline.engine.delta.table_log import TableLog
    from waterline.engine.tables import feed_tables

    monkeypatch.setattr(model, "python_vis", _vis)
    spec = make_spec(tmp_path, TIERS)
    feed = Feed(spec, spark=spark, clock=far_future_clock())
    oracle = FeedModel(TIERS)
    rows = {
        i: {"id": i, "event_time": BASE_US + i * 7 * MINUTE, "status": ["final", "prelim", None][i % 3],
            "embargo_until": None if i % 4 == 0 else BASE_US + i * 11 * MINUTE, "v": "x"}
        for i in range(12)
    }
    w_t = None

    def ingest_and_check(partition, output):
        write_partition(tmp_path, partition, [_source(r) for r in output.values()])
        result = feed.ingest(partition)
        assert result.versions_written == oracle.ingest(partition, list(output.values()))

    def release_and_check(minutes, reads=None):
        nonlocal w_t
        as_of = BASE_US + minutes * MINUTE
        with local_reads(reads):  # "0": files read and written by Spark's tasks, else from the driver
            result = feed.release(as_of=as_of)
        w_t = as_of if w_t is None else max(w_t, as_of)
        for tier in TIERS:
            assert result.tiers[tier].w_us == w_t
            # the state rode in the commit's userMetadata
            assert feed_tables.tier_state(TableLog.open(spec.tier_path(tier))).w == w_t
            got = {k: (tuple(r[c] for c in PAYLOAD), r["_wl_seq"]) for k, r in read_tier(spark, spec, tier).items()}
            assert got == expected_tier(oracle, tier, w_t), f"tier {tier} at W={w_t}"

    ingest_and_check("a", rows)
    release_and_check(30)
    revised = {k: dict(r) for k, r in rows.items() if k != 3}  # one removed
    revised[5]["v"] = "y"  # one corrected
    revised[7]["status"] = "final"  # one reclassified
    ingest_and_check("a", revised)
    ingest_and_check("a", revised)  # identical re-run: no version
    ingest_and_check("b", {k: dict(r, id=k) for k, r in rows.items() if k < 4})
    # waterline's output committer ran where the tasks run: its jar ships with the Delta jars
    assert any("/attempt_" in uri for uri in TableLog.open(spec.held_path).file_uris())
    release_and_check(90, reads="0")
    release_and_check(60)  # asked below W_T: stays at W_T
    feed.gc()
    release_and_check(3 * 24 * 60, reads="0")  # past the next XLON 08:30 after New Year
    # and for the staged releases' tier files Spark's tasks wrote (a Hadoop task attempt id,
    # ``attempt_<job>_<n>_m_<task>_<try>``; files written from the driver have none)
    assert any("/attempt_" in uri and "_m_" in uri for tier in TIERS
               for uri in TableLog.open(spec.tier_path(tier)).file_uris())


def test_where_spark_runs(spark):
    """Connect: this process has no JVM child and no SparkContext. Cluster: executors in other JVMs."""
    import psutil

    children = [p.name() for p in psutil.Process().children(recursive=True)]
    # over Connect compiled, as users run it; on the cluster interpreted, as the rest of the
    # suite (test_spark_modes.py says why)
    codegen = (spark.conf.get("spark.sql.codegen.wholeStage"), spark.conf.get("spark.sql.codegen.factoryMode"))
    expected = ("true", "FALLBACK") if REMOTE else ("false", "NO_CODEGEN")
    assert codegen == expected, f"{codegen}: run it from test_spark_modes.py"
    if REMOTE:
        from pyspark import SparkContext

        assert not any("java" in name for name in children), children
        assert SparkContext._active_spark_context is None
        assert spark.range(3).count() == 3
    else:
        sc = spark.sparkContext
        assert sc.master == MASTER
        executors = sc._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
        assert executors == 2


def test_dagster_definitions_ingest_and_release_here(tmp_path):
    """The same Dagster definitions: ingest two partitions, run `f_release`, every check passes.
    Over Connect, the run (this process) still has no JVM."""
    import psutil
    from dagster import AssetKey, DagsterInstance, materialize

    from tests.dagster.feeds import rows, spec as make_feed, write_partition as write
    from waterline.dagster import definitions_from_specs

    feed = make_feed(tmp_path)
    for partition in "ab":
        write(tmp_path, partition, rows(partition))
    defs = definitions_from_specs([feed])
    assert (defs.resources["waterline"].spark_remote is not None) == bool(REMOTE)
    (tmp_path / "dagster_home").mkdir()
    instance = DagsterInstance.local_temp(tempdir=str(tmp_path / "dagster_home"))
    held = defs.get_assets_def(AssetKey(["f", "held"]))
    ingested = materialize([held], instance=instance, resources={"waterline": defs.resources["waterline"]},
                           tags={"dagster/asset_partition_range_start": "a", "dagster/asset_partition_range_end": "b"})
    assert ingested.success
    released = defs.get_job_def("f_release").execute_in_process(instance=instance)
    assert released.success
    assert all(e.passed for e in released.get_asset_check_evaluations())
    assert set(read_tier(None, feed, "emb")) == {("a", 0), ("b", 100)}  # odd ids wait for 2099
    if REMOTE:
        assert not any("java" in p.name() for p in psutil.Process().children(recursive=True))
