"""Every reader subscribers use reads waterline's tables alike, after every kind of commit it writes.

waterline writes Delta commit files itself (held appends, staged releases with
rewrites and change data, maintenance); Delta's guarantee to readers is its own
to keep. After each kind of commit, the tier and held tables read equal through
deltalake, Spark (snapshot, time travel, ``readChangeFeed``), polars and DuckDB's
delta extension (loaded from its wheel, offline). Then a user's own Spark
maintenance on a tier (DESCRIBE HISTORY, OPTIMIZE, VACUUM, RESTORE) is followed
by releases, and the tiers still equal `waterline.semantics`. Tier files carry
``event_time`` statistics that Spark's data skipping uses on a range query. A feed of
every type's extreme values (`tests.interop.extremes`), through both release paths,
held appends, a revision and compaction, reads alike filtered and unfiltered on every
column by every reader (`tests.interop.filtered_reads`).
"""

from __future__ import annotations

import glob
import json
import os
from datetime import datetime, timezone

import pytest

from tests.engine.feedkit import PAYLOAD, far_future_clock, make_spec, read_tier, write_partition
from tests.engine.model import MINUTE, POLICIES, FeedModel, expected_tier
from tests.engine.test_release_differential import BASE_US, _iso

pytestmark = pytest.mark.spark

TIERS = {"d10": POLICIES["d10"], "win": POLICIES["win"], "emb": POLICIES["emb"]}
KEY = ("_wl_partition", "id", "v", "_wl_seq")


def _row(key: int, minute: int, v: str, embargo_minute: int | None = None) -> dict:
    return {"id": key, "event_time": BASE_US + minute * MINUTE, "status": "final",
            "embargo_until": None if embargo_minute is None else BASE_US + embargo_minute * MINUTE, "v": v}


def _source(row: dict) -> dict:
    return {**row, "event_time": _iso(row["event_time"]),
            "embargo_until": None if row["embargo_until"] is None else _iso(row["embargo_until"])}


def _duckdb():
    import duckdb
    import duckdb_extension_delta

    [extension] = glob.glob(os.path.join(os.path.dirname(duckdb_extension_delta.__file__), "extensions", "*",
                                         "delta.duckdb_extension"))
    con = duckdb.connect()
    con.execute(f"LOAD '{extension}'")  # from the wheel: no download
    return con


def _rows(records) -> list[tuple]:
    return sorted(tuple(r[c] for c in KEY) for r in records)


def _read_all(spark, path: str, duck) -> dict[str, list[tuple]]:
    import polars as pl

    from waterline.engine.delta.storage import delta_table

    return {
        "deltalake": _rows(delta_table(path).to_pyarrow_table().to_pylist()),
        "spark": _rows(r.asDict() for r in spark.read.format("delta").load(path).collect()),
        "polars": _rows(pl.read_delta(path).to_dicts()),
        "duckdb": _rows(duck.execute(f"SELECT * FROM delta_scan('{path}')").to_arrow_table().to_pylist()),
    }


def _readers_agree(spark, spec, duck, versions_seen: dict[str, set[int]]) -> None:
    """Every reader sees the same rows in every table now; Spark's time travel and change feed
    agree with deltalake's on every tier version seen so far."""
    from waterline.engine.delta.table_log import TableLog

    for tier in spec.tiers:
        path = spec.tier_path(tier)
        seen = _read_all(spark, path, duck)
        assert len({tuple(v) for v in seen.values()}) == 1, f"tier {tier}: readers differ: {seen}"
        log = TableLog.open(path)
        versions_seen.setdefault(tier, set()).add(log.version)
        # time travel: the oldest version seen (newer ones were each checked when they were the newest)
        first = min(versions_seen[tier])
        by_spark = _rows(r.asDict() for r in spark.read.format("delta").option("versionAsOf", first)
                         .load(path).collect())
        assert by_spark == _rows(TableLog.open(path, version=first).to_arrow().to_pylist()), (tier, first)
        cdf_spark = sorted((r["_change_type"], r["_commit_version"], r["id"], r["v"]) for r in spark.read
                           .format("delta").option("readChangeFeed", "true").option("startingVersion", first)
                           .load(path).collect())
        cdf_rs = sorted((r["_change_type"], r["_commit_version"], r["id"], r["v"])
                        for r in log.changes(first, log.version).to_pylist())
        assert cdf_spark == cdf_rs, f"tier {tier}: change feeds differ"
    held = spec.held_path
    held_rows = {name: sorted(r) for name, r in _read_all_held(spark, held, duck).items()}
    assert len({tuple(v) for v in held_rows.values()}) == 1, "held: readers differ"


def _read_all_held(spark, path: str, duck) -> dict[str, list[tuple]]:
    import polars as pl

    from waterline.engine.delta.storage import delta_table

    def key(records):
        return [(r["_wl_partition"], r["id"], r["_wl_seq"]) for r in records]

    return {
        "deltalake": key(delta_table(path).to_pyarrow_table(columns=["_wl_partition", "id", "_wl_seq"]).to_pylist()),
        "spark": key(r.asDict() for r in spark.read.format("delta").load(path).collect()),
        "polars": key(pl.read_delta(path, columns=["_wl_partition", "id", "_wl_seq"]).to_dicts()),
        "duckdb": key(duck.execute(f"SELECT _wl_partition, id, _wl_seq FROM delta_scan('{path}')")
                      .to_arrow_table().to_pylist()),
    }


def _tiers_equal_semantics(spec, model) -> None:
    from waterline.engine.delta.table_log import TableLog
    from waterline.engine.tables import feed_tables

    for tier in spec.tiers:
        state = feed_tables.tier_state(TableLog.open(spec.tier_path(tier)))
        got = {k: (tuple(r[c] for c in PAYLOAD), r["_wl_seq"]) for k, r in read_tier(None, spec, tier).items()}
        assert got == expected_tier(model, tier, state.w, state.seq), f"tier {tier} differs from the semantics"


@pytest.fixture
def feed(spark, tmp_path):
    from waterline import Feed

    spec = make_spec(tmp_path, TIERS)
    model = FeedModel(TIERS)
    feed = Feed(spec, spark=spark, clock=far_future_clock())

    def step(partition: str, rows: list[dict], minute: int):
        write_partition(tmp_path, partition, [_source(r) for r in rows])
        feed.ingest(partition)
        model.ingest(partition, rows)
        return feed.release(as_of=BASE_US + minute * MINUTE)

    return feed, model, step


def test_every_reader_reads_every_kind_of_commit_alike(spark, feed):
    from waterline.engine.delta.table_log import TableLog

    feed, model, step = feed
    duck, seen = _duckdb(), {}
    step("a", [_row(1, 0, "x"), _row(2, 3, "y", embargo_minute=12), _row(3, 5, "z")], 20)  # held append, inserts
    _readers_agree(spark, feed.spec, duck, seen)
    step("a", [_row(1, 0, "x2"), _row(3, 5, "z"), _row(4, 8, "w", embargo_minute=15)], 22)  # rewrite + cdc
    _readers_agree(spark, feed.spec, duck, seen)
    step("a", [_row(1, 0, "x2"), _row(3, 5, "z"), _row(4, 8, "w", embargo_minute=15), _row(5, 25, "u")], 40)  # inserts
    step("b", [_row(6, 30, "t")], 50)  # a new partition; win expires rows of a
    _readers_agree(spark, feed.spec, duck, seen)
    result = feed.maintain()  # OPTIMIZE (dataChange false), checkpoint, vacuum
    assert result.tables["d10"].files_compacted >= 2 and result.tables["d10"].files_after == 2
    _readers_agree(spark, feed.spec, duck, seen)
    _tiers_equal_semantics(feed.spec, model)
    log = TableLog.open(feed.spec.tier_path("d10"))
    # the compaction, then its files restated with waterline's statistics: no change-feed rows
    optimized = [int(c["version"]) for c in log.history() if c.get("operation") == "OPTIMIZE"]
    assert len(optimized) == 2 and log.changes(min(optimized), max(optimized)).num_rows == 0


def test_a_users_spark_maintenance_on_a_tier_then_releases_keep_tiers_exact(spark, feed):
    feed, model, step = feed
    step("a", [_row(1, 0, "x"), _row(2, 3, "y")], 20)
    step("b", [_row(3, 10, "z"), _row(4, 12, "w")], 30)
    path = feed.spec.tier_path("d10")
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    assert {h["operation"] for h in history} >= {"WATERLINE RELEASE"}
    restore_to = max(h["version"] for h in history if h["operation"] == "WATERLINE RELEASE") - 1
    spark.sql(f"OPTIMIZE delta.`{path}`").collect()
    step("a", [_row(1, 0, "x2"), _row(2, 3, "y")], 35)
    _tiers_equal_semantics(feed.spec, model)
    spark.sql(f"VACUUM delta.`{path}` RETAIN 168 HOURS").collect()
    step("b", [_row(3, 10, "z"), _row(4, 12, "w2"), _row(6, 14, "t")], 40)
    _tiers_equal_semantics(feed.spec, model)
    spark.sql(f"RESTORE TABLE delta.`{path}` TO VERSION AS OF {restore_to}").collect()  # rows of an old release
    step("c", [_row(7, 20, "q")], 45)
    _tiers_equal_semantics(feed.spec, model)  # the release after the RESTORE reconciled the tier
    step("c", [_row(7, 20, "q"), _row(8, 21, "p")], 50)
    _tiers_equal_semantics(feed.spec, model)


def _files_scanned(df) -> int:
    """How many files Spark's scan of ``df`` read (after data skipping), from its SQL metrics
    (the classic session's plan, read through py4j; adaptive execution would wrap the scan)."""
    df.sparkSession.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        df = df.select("*")  # a new plan under that setting
        df.collect()
    finally:
        df.sparkSession.conf.set("spark.sql.adaptive.enabled", "true")
    plan = df._jdf.queryExecution().executedPlan()
    leaves = plan.collectLeaves()
    total = 0
    for i in range(leaves.size()):
        metrics = leaves.apply(i).metrics()
        if metrics.contains("numFiles"):
            total += metrics.apply("numFiles").value()
    return total


def test_tier_files_carry_event_time_bounds_spark_skips_files_by(spark, feed):
    from waterline.engine.delta.table_log import TableLog

    feed, model, step = feed
    step("a", [_row(1, 0, "x"), _row(2, 4, "y")], 20)
    step("a", [_row(1, 0, "x"), _row(2, 4, "y"), _row(3, 40, "z"), _row(4, 44, "w")], 60)
    path = feed.spec.tier_path("d10")
    actions = TableLog.open(path).add_actions().to_pylist()
    assert len(actions) == 2
    for action in actions:
        low, high = action["min.event_time"], action["max.event_time"]
        assert low is not None and high is not None
    cut = datetime.fromtimestamp((BASE_US + 30 * MINUTE) / 1e6, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    tier = spark.read.format("delta").load(path)
    recent = tier.filter(f"event_time >= TIMESTAMP '{cut}'")
    assert sorted(r["id"] for r in recent.collect()) == [3, 4]
    assert _files_scanned(recent) == 1 and _files_scanned(tier) == 2
    exact = BASE_US + 44 * MINUTE  # a bound on the last row's own instant keeps its file
    at = datetime.fromtimestamp(exact / 1e6, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    assert [r["id"] for r in tier.filter(f"event_time >= TIMESTAMP '{at}'").collect()] == [4]


def test_filtered_reads_of_every_types_extremes_miss_no_row(spark, tmp_path):
    """Tier files from the driver's release path and Spark's, held appends, a revision that
    rewrites a file, and compaction's output: for each reader and column, a filtered read
    returns the rows the unfiltered read plus the same filter does (statistics never skip
    a file holding a matching row), and every reader reads the same rows."""
    from tests.engine.feedkit import local_reads
    from tests.interop.extremes import FILTERED, extreme_spec, tame_rows, wild_rows, write_source
    from tests.interop.filtered_reads import deltalake_outcome, duckdb_outcome, every_reader, polars_outcome
    from waterline import Feed

    spec = extreme_spec(tmp_path, audiences={"r": ["all"]})
    feed = Feed(spec, spark=spark, clock=far_future_clock())
    write_source(tmp_path, "tame", tame_rows()[:2])
    write_source(tmp_path, "wild", wild_rows()[:1])
    feed.ingest("tame")
    feed.ingest("wild")
    feed.release(as_of="2026-01-01T10:05:00Z")  # staged on the driver (a few rows)
    write_source(tmp_path, "tame", tame_rows())
    write_source(tmp_path, "wild", wild_rows())
    feed.ingest("tame")
    feed.ingest("wild")
    with local_reads("0"):
        feed.release(as_of="2026-01-01T10:30:00Z")  # through Spark
    revised = tame_rows()
    revised[2]["s"] = "revised"
    write_source(tmp_path, "tame", revised[:3])  # one revised, one removed
    feed.ingest("tame")
    feed.release(as_of="2026-01-01T10:40:00Z")
    duck = _duckdb()
    # the files as released and appended (polars cannot decode the DELTA_BYTE_ARRAY pages of
    # DECIMAL(38, s) in held's Spark-written files at all, filtered or not: tiers only)
    for path, outcomes in ((spec.tier_path("all"), (deltalake_outcome, polars_outcome)),
                           (spec.held_path, (deltalake_outcome,))):
        for outcome in (*(o(path, FILTERED) for o in outcomes), duckdb_outcome(duck, path, FILTERED)):
            assert not outcome.missed, f"{path}: {outcome.reader} missed rows: {outcome.missed}"
    result = feed.maintain()
    assert result.tables["all"].files_compacted >= 2 and result.tables["held"].files_compacted >= 2
    for path in (spec.tier_path("all"), spec.held_path):  # and compacted (Spark too: its reads are slow)
        outcomes = every_reader(spark, duck, path, FILTERED)
        for outcome in outcomes:
            assert not outcome.missed, f"{path}: {outcome.reader} missed rows: {outcome.missed}"
            # at least "<=" and ">=" on every column it filters (the always-NULL one has no operand)
            assert outcome.checked >= 2 * (len(FILTERED) - 1 - len(outcome.unsupported)), outcome
        assert {o.reader: o.unsupported for o in outcomes}["deltalake"] <= {"bin"}
    import polars as pl

    from waterline.engine.delta.storage import delta_table

    path = spec.tier_path("all")
    ids = {"deltalake": delta_table(path).to_pyarrow_table(columns=["id"]).column("id").to_pylist(),
           "spark": [r["id"] for r in spark.read.format("delta").load(path).select("id").collect()],
           "polars": pl.read_delta(path, columns=["id"])["id"].to_list(),
           "duckdb": [r[0] for r in duck.execute(f"SELECT id FROM delta_scan('{path}')").fetchall()]}
    assert all(sorted(v) == [1, 2, 3, 5, 6, 7] for v in ids.values()), ids
    assert feed.audit_current()["all"].violations == 0 and feed.changes("all").num_rows > 0
    _shared_as_released(spec, tmp_path, [1, 2, 3, 5, 6, 7])


def _shared_as_released(spec, root, ids: list[int]) -> None:
    """The sharing server answers /query and /changes on the extremes' tier in both response
    formats, and the files it hands out hold the tier's rows."""
    import io

    import pyarrow.parquet as pq
    import requests

    from tests.sharing.conftest import serve

    server = serve(spec, root, audiences={"r": ["all"]})
    try:
        base = f"{server.endpoint}/shares/f/schemas/tiers/tables/all"
        for response_format in ("parquet", "delta"):
            headers = {"Authorization": f"Bearer {server.tokens['r']}",
                       "delta-sharing-capabilities": f"responseformat={response_format}"}
            query = requests.post(f"{base}/query", json={}, headers=headers, timeout=60)
            changes = requests.get(f"{base}/changes", params={"startingVersion": 0}, headers=headers, timeout=60)
            assert query.status_code == changes.status_code == 200, (query.text[:300], changes.text[:300])
            urls = []
            for line in query.text.splitlines():
                entry = json.loads(line).get("file")
                if entry:
                    urls.append(entry["url"] if response_format == "parquet"
                                 else entry["deltaSingleAction"]["add"]["path"])
            got = [i for url in urls
                   for i in pq.read_table(io.BytesIO(requests.get(url, timeout=60).content)).column("id").to_pylist()]
            assert sorted(got) == ids, response_format
    finally:
        server.stop()
