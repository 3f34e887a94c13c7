"""A new output column on a live feed, end to end on Spark and Delta (issue 56).

A feed is ingested and released; `Feed.apply()` adds the column ``venue`` to held and every
tier (one ``metaData`` commit each); a re-ingest of the same rows (``venue`` NULL) writes no
version; a re-ingest that fills ``venue`` for some rows appends versions for those rows only,
released by the policies in force. After every release every tier equals
`waterline.semantics.spec_history.SpecHistory`; the four table readers (deltalake, Spark,
polars, DuckDB) read every tier with the new schema, older rows NULL in ``venue``; the
change feed across the change reads alike through `Feed.changes` and Spark's
``readChangeFeed``; the official Delta Sharing client reads snapshots and changes.
"""

from __future__ import annotations

import pytest

from tests.engine.feedkit import (SCHEMA, TRANSFORM, far_future_clock, local_reads, make_spec, read_tier,
                                  write_partition)
from tests.engine.model import MINUTE
from tests.interop.test_readers import _duckdb
from tests.sharing.scenario import BASE_US, iso
from waterline import Feed
from waterline.engine.delta.table_log import TableLog
from waterline.errors import WaterlineError
from waterline.semantics import NEG_INF, POS_INF
from waterline.semantics.spec_history import Policy, SpecHistory

pytestmark = pytest.mark.spark

TIERS = {"rt": "TRUE", "d15": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"}
ORACLE = {"rt": Policy("TRUE", lambda p: ((NEG_INF, POS_INF),)),
          "d15": Policy("d15", lambda p: ((p["e"] + 15 * MINUTE, POS_INF),))}
VENUE_TRANSFORM = TRANSFORM.replace(" FROM source", ", CAST(venue AS STRING) AS venue FROM source")
AUDIENCES = {"acme": ["rt", "d15"]}


def _spec(root, venue: bool):
    if not venue:
        return make_spec(root, TIERS, audiences=AUDIENCES)
    source = {"format": "json", "path": str(root / "src" / "{partition}"),
              "options": {"schema": SCHEMA + ", venue STRING"}}
    return make_spec(root, TIERS, audiences=AUDIENCES, source=source, transform=VENUE_TRANSFORM)


def _row(i: int, minute: int, v: str, venue: str | None = None) -> dict:
    row = {"id": i, "event_time": iso(BASE_US + minute * MINUTE), "status": "final", "embargo_until": None, "v": v}
    return row if venue is None else {**row, "venue": venue}


def _payload(row: dict) -> dict:
    """The oracle's payload: a NULL in the added column is no value (docs/decisions.md)."""
    out = {"v": row["v"], "e": BASE_US + _minute(row) * MINUTE}
    return out if row.get("venue") is None else {**out, "venue": row["venue"]}


def _minute(row: dict) -> int:
    return int(row["event_time"][11:13]) * 60 + int(row["event_time"][14:16]) - 600


class Run:
    """The engine and the oracle, driven by the same steps."""

    def __init__(self, spark, root) -> None:
        self.spark, self.root = spark, root
        self.feed = Feed(_spec(root, venue=False), spark=spark, clock=far_future_clock())
        self.oracle = SpecHistory(ORACLE, {"v": "string"}, 0)
        self.rows: dict[str, list[dict]] = {}

    def ingest(self, partition: str, rows: list[dict]) -> int:
        write_partition(self.root, partition, rows)
        self.rows[partition] = rows
        result = self.feed.ingest(partition)
        expected = self.oracle.ingest({(partition, r["id"]): _payload(r) for r in rows})
        assert result.versions_written == expected, result
        return expected

    def release(self, minute: int) -> None:
        from waterline.clock import format_instant, parse_instant

        w = BASE_US + minute * MINUTE
        self.feed.release(as_of=parse_instant(format_instant(w)))
        self.oracle.release(w, w)
        for tier in TIERS:
            got = {k: (r["v"], r.get("venue")) for k, r in read_tier(self.spark, self.feed.spec, tier).items()}
            assert got == self.expected(tier), tier

    def expected(self, tier: str) -> dict:
        return {k: (r["v"], r.get("venue")) for k, r in self.oracle.contents(tier).items()}


@pytest.mark.parametrize("reads", [None, "0"], ids=["default", "spark-jobs"])
def test_a_column_added_to_a_live_feed_reads_null_before_and_values_after(spark, tmp_path, reads):
    with local_reads(reads):  # "0": every release reads and writes with Spark jobs (MERGE)
        _column_added(spark, tmp_path)


def _column_added(spark, tmp_path):
    run = Run(spark, tmp_path)
    run.ingest("a", [_row(1, 0, "x"), _row(2, 5, "y"), _row(3, 20, "z")])
    run.release(25)

    with pytest.raises(WaterlineError, match="column venue added; run `waterline apply"):
        Feed(_spec(tmp_path, venue=True), spark=spark, clock=far_future_clock()).release()
    run.feed = Feed(_spec(tmp_path, venue=True), spark=spark, clock=far_future_clock())
    applied, diff = run.feed.apply()
    assert applied.version == 2 and diff.columns_added == ("venue",)
    run.oracle.apply(ORACLE, {"v": "string", "venue": "string"}, BASE_US + 26 * MINUTE)
    for path in (run.feed.spec.held_path, *[run.feed.spec.tier_path(t) for t in TIERS]):
        assert ("venue", "string") in TableLog.open(path).columns(), path
    assert run.feed.apply()[0].version == 2  # nothing left to apply

    # the same rows, venue NULL: no version (the row hash leaves a trailing NULL added column out)
    assert run.ingest("a", [_row(1, 0, "x"), _row(2, 5, "y"), _row(3, 20, "z")]) == 0
    # venue filled for 1 and 3, 2 revised, 4 new: four versions, released by the policies in force
    assert run.ingest("a", [_row(1, 0, "x", "XNYS"), _row(2, 5, "y2"), _row(3, 20, "z", "XLON"),
                            _row(4, 22, "w", "XNYS")]) == 4
    run.release(30)
    run.ingest("b", [_row(5, 28, "q", "BATS"), _row(6, 29, "r")])
    run.release(50)
    assert run.expected("d15")[("a", 4)] == ("w", "XNYS")
    _readers_agree(spark, run)
    _changes_agree(spark, run)
    _sharing_agrees(run, tmp_path)


def _readers_agree(spark, run: Run) -> None:
    import polars as pl

    from waterline.engine.delta.storage import delta_table

    duck = _duckdb()
    for tier in TIERS:
        path = run.feed.spec.tier_path(tier)
        expected = sorted((k[0], k[1], v, venue) for k, (v, venue) in run.expected(tier).items())
        reads = {
            "deltalake": delta_table(path).to_pyarrow_table().to_pylist(),
            "spark": [r.asDict() for r in spark.read.format("delta").load(path).collect()],
            "polars": pl.read_delta(path).to_dicts(),
            "duckdb": duck.execute(f"SELECT * FROM delta_scan('{path}')").to_arrow_table().to_pylist(),
        }
        for reader, rows in reads.items():
            got = sorted((r["_wl_partition"], r["id"], r["v"], r["venue"]) for r in rows)
            assert got == expected, f"{reader} {tier}"


def _replay(changes: list[dict]) -> dict:
    """A change feed's rows, applied in commit order: (partition, id) -> (v, venue)."""
    out: dict = {}
    for r in sorted(changes, key=lambda r: r["_commit_version"]):
        key = (r["_wl_partition"], r["id"])
        if r["_change_type"] in ("insert", "update_postimage"):
            out[key] = (r["v"], r["venue"])
        elif r["_change_type"] == "delete":
            out.pop(key, None)
    return out


def _changes_agree(spark, run: Run) -> None:
    for tier in TIERS:
        expected = run.expected(tier)
        mine = run.feed.changes(tier).to_pylist()
        assert _replay(mine) == expected, f"Feed.changes {tier}"
        assert any(r["venue"] is not None for r in mine), tier  # changes after the apply carry it
        sparks = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
                  .load(run.feed.spec.tier_path(tier)).collect())
        assert _replay([r.asDict() for r in sparks]) == expected, f"Spark readChangeFeed {tier}"


def _sharing_agrees(run: Run, root) -> None:
    delta_sharing = pytest.importorskip("delta_sharing")
    from tests.sharing.conftest import serve
    from tests.sharing.scenario import url

    live = serve(run.feed.spec, root, audiences=AUDIENCES)
    try:
        for tier in TIERS:
            expected = run.expected(tier)
            where = url(live.profiles, "acme", tier)
            for delta_format in (False, True):
                frame = delta_sharing.load_as_pandas(where, use_delta_format=delta_format)
                got = {(r["_wl_partition"], r["id"]): (r["v"], _none(r["venue"])) for r in frame.to_dict("records")}
                assert got == expected, f"sharing {tier} delta_format={delta_format}"
                changes = delta_sharing.load_table_changes_as_pandas(where, starting_version=0,
                                                                     use_delta_format=delta_format)
                records = [{**r, "venue": _none(r["venue"])} for r in changes.to_dict("records")]
                assert _replay(records) == expected, f"sharing changes {tier} delta_format={delta_format}"
    finally:
        live.stop()


def _none(value):
    """pandas' missing value as None."""
    return None if value is None or value != value else value


def test_a_retyped_column_is_refused_in_one_line(spark, tmp_path):
    with_n = TRANSFORM.replace(" v FROM", " v, CAST(id AS INT) AS n FROM")
    feed = Feed(make_spec(tmp_path, TIERS, transform=with_n), spark=spark, clock=far_future_clock())
    write_partition(tmp_path, "a", [_row(1, 0, "x")])
    feed.ingest("a")
    widened = make_spec(tmp_path, TIERS, transform=with_n.replace("AS INT", "AS BIGINT"))
    with pytest.raises(WaterlineError, match=r"column n: int -> bigint: type widening needs Delta's typeWidening"):
        Feed(widened, spark=spark, clock=far_future_clock()).apply()
    narrowed = make_spec(tmp_path, TIERS, transform=with_n.replace("AS INT", "AS SMALLINT"))
    with pytest.raises(WaterlineError, match=r"column n: int -> smallint is no widening") as info:
        Feed(narrowed, spark=spark, clock=far_future_clock()).apply()
    assert "\n" not in str(info.value)


def test_the_row_hash_leaves_trailing_null_added_columns_out(spark):
    """The decision the test above relies on, per row: a row hashes as it did before a column
    was added while that column (and every column added after it) is NULL."""
    from waterline.engine.ingest.profile import row_hash

    before = spark.createDataFrame([(1, "x")], "id BIGINT, v STRING")
    old = before.select(row_hash(before.schema, ["id", "v"]).alias("h")).first().h
    after = spark.createDataFrame([(1, None, "x", None), (1, "XNYS", "x", None), (1, None, "x", 7),
                                   (1, "XNYS", "x", 7)], "id BIGINT, venue STRING, v STRING, n INT")
    # venue added first, then n; the output names venue before v: the added ones hash last, in order
    hashes = [r.h for r in after.select(row_hash(after.schema, ["id", "venue", "v", "n"],
                                                 added=("venue", "n")).alias("h")).collect()]
    assert hashes[0] == old
    assert len(set(hashes)) == 4
    once = spark.createDataFrame([(1, "x", "XNYS")], "id BIGINT, v STRING, venue STRING")
    venue_only = once.select(row_hash(once.schema, ["id", "v", "venue"], added=("venue",)).alias("h")).first().h
    assert hashes[1] == venue_only  # a version written before n existed equals one with n NULL
