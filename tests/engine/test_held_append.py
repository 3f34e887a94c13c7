"""Held appends committed without Spark's Delta writer (`engine.ingest.held_append`), on real Spark and Delta.

Every ingest after the one that creates the held table writes its versions as
Parquet files and makes one commit of its own: the files, the `waterline.seq`
transaction and the state. These tests read what those commits leave with both
Delta readers (Spark and deltalake), and check the paths where the commit must
not happen: duplicate keys, a version another writer took, a crash before it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.engine.feedkit import far_future_clock, make_spec, write_partition
from waterline.engine.delta.stages import STAGE_DIR
from waterline.engine.delta.table_log import APP_SEQ, TableLog
from waterline.errors import WaterlineError
from waterline.engine.tables import feed_tables

pytestmark = pytest.mark.spark
TIERS = {"rt": "TRUE", "d15": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"}


def _row(i, minute=0, v="x"):
    return {"id": i, "event_time": f"2026-01-01 10:{minute:02d}:00", "status": "final", "v": v}


def _commit(held: str, version: int) -> list[dict]:
    return [json.loads(line) for line in Path(held, "_delta_log", f"{version:020d}.json").read_text().splitlines()]


def _held_rows(spark, spec) -> tuple[list, list]:
    """(Spark's rows, deltalake's rows) of the held table: (partition, id, v, seq, removed)."""
    columns = ["_wl_partition", "id", "v", "_wl_seq", "_wl_removed"]
    by_spark = sorted((tuple(r) for r in spark.read.format("delta").load(spec.held_path).select(*columns).collect()),
                      key=repr)
    by_deltalake = sorted((tuple(r.values()) for r in TableLog.open(spec.held_path).to_arrow(columns).to_pylist()),
                          key=repr)
    return by_spark, by_deltalake


def _held_with_one_row(spark, tmp_path):
    """A feed whose held table exists (partition a, id 1: Spark's Delta writer created it)."""
    from waterline.engine.ingest.ingest import ingest

    spec = make_spec(tmp_path, TIERS)
    write_partition(tmp_path, "a", [_row(1)])
    ingest(spark, spec, "a", clock=far_future_clock())
    return spec


def test_each_ingest_is_one_commit_both_readers_read_with_the_statistics_releases_prune_by(spark, tmp_path):
    from waterline.engine.ingest.ingest import ingest

    spec = make_spec(tmp_path, TIERS)
    clock = far_future_clock()
    write_partition(tmp_path, "a", [_row(i, i) for i in range(5)])
    ingest(spark, spec, "a", clock=clock)  # creates the held table: Spark's Delta writer
    write_partition(tmp_path, "b", [_row(i, i) for i in range(3)])
    write_partition(tmp_path, "a", [_row(0, 0, "changed"), *[_row(i, i) for i in range(1, 4)]])
    before = TableLog.open(spec.held_path).version
    fresh = ingest(spark, spec, "b", clock=clock)
    diffed = ingest(spark, spec, "a", clock=clock)
    assert (fresh.seq, fresh.inserted) == (2, 3)
    assert (diffed.seq, diffed.updated, diffed.removed, diffed.inserted) == (3, 1, 1, 0)
    assert TableLog.open(spec.held_path).version == before + 2  # one commit each, nothing else

    for version, state in ((before + 1, fresh), (before + 2, diffed)):
        actions = _commit(spec.held_path, version)
        info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
        assert info["operation"] == "WRITE" and info["isBlindAppend"] is True
        assert json.loads(info["userMetadata"])["waterline"]["seq"] == state.seq
        assert [a["txn"] for a in actions if "txn" in a][0]["appId"] == APP_SEQ
        adds = [a["add"] for a in actions if "add" in a]
        assert adds and all(a["path"].startswith(f"{STAGE_DIR}/") for a in adds)
        assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == state.versions_written
    assert TableLog.open(spec.held_path).transaction_version(APP_SEQ) == 3

    by_spark, by_deltalake = _held_rows(spark, spec)
    assert by_spark == by_deltalake
    assert ("a", 0, "changed", 3, False) in by_spark and ("a", 4, None, 3, True) in by_spark
    assert sum(1 for r in by_spark if r[0] == "b") == 3

    # Every file, whoever wrote it, has the statistics the release prunes by (the held
    # table's delta.dataSkippingStatsColumns, struct leaf _wl_hash.h1 included).
    actions = TableLog.open(spec.held_path).add_actions().to_pylist()
    assert len(actions) >= 3
    for action in actions:
        for column in ("_wl_seq", "_wl_tau__d15", "_wl_last__d15", "_wl_hash.h1"):
            assert action[f"null_count.{column}"] is not None, (column, action)
            if action[f"null_count.{column}"] < action["num_records"]:  # removals have no hash: no bounds
                assert action[f"min.{column}"] is not None and action[f"max.{column}"] is not None, (column, action)


def test_duplicate_keys_in_a_new_partition_commit_nothing_and_leave_no_file(spark, tmp_path):
    """The new partition is profiled by the write; its keys are checked in the files written,
    before any commit: the error names the keys, and the files are deleted."""
    from waterline.engine.ingest.ingest import ingest

    spec = _held_with_one_row(spark, tmp_path)
    version = TableLog.open(spec.held_path).version
    write_partition(tmp_path, "b", [_row(1), _row(2), _row(2, v="y"), _row(3)])
    with pytest.raises(WaterlineError, match=r"partition b: duplicate keys \['id'\].*\(id=2\) x2.*nothing was written"):
        ingest(spark, spec, "b", clock=far_future_clock())
    assert TableLog.open(spec.held_path).version == version
    assert not list(Path(spec.held_path, STAGE_DIR).rglob("*.parquet"))


def _foreign_commit_after_the_write(spark, monkeypatch, statement: str) -> list[str]:
    """Make ``statement`` (Spark SQL over the held table's ``{held}``) commit right after the
    first held append's files are written; the tokens of every write, in order."""
    from waterline.engine.ingest import held_append

    real_write = held_append.write
    tokens: list[str] = []

    def write_then_someone_commits(versions, columns, held_path, token, partition):
        real_write(versions, columns, held_path, token, partition)
        tokens.append(token)
        if len(tokens) == 1:  # a foreign commit takes the next version
            spark.sql(statement.format(held=f"delta.`{held_path}`"))

    monkeypatch.setattr(held_append, "write", write_then_someone_commits)
    return tokens


def test_a_commit_that_kept_every_row_is_committed_after(spark, tmp_path, monkeypatch):
    """A property change (a maintenance job) takes the held table's next version after Spark
    wrote the files: the append is written after it, as Delta's own writers rebase a blind
    append, with no second write; the property stays, nothing is doubled or lost."""
    from waterline.engine.ingest.ingest import ingest

    spec = _held_with_one_row(spark, tmp_path)
    before = TableLog.open(spec.held_path).version
    tokens = _foreign_commit_after_the_write(spark, monkeypatch, "ALTER TABLE {held} SET TBLPROPERTIES ('team' = 'data')")
    write_partition(tmp_path, "b", [_row(5), _row(6)])
    result = ingest(spark, spec, "b", clock=far_future_clock())
    assert len(tokens) == 1 and result.seq == 2 and result.inserted == 2
    held = TableLog.open(spec.held_path)
    assert held.version == before + 2 and held.configuration["team"] == "data"
    by_spark, by_deltalake = _held_rows(spark, spec)
    assert by_spark == by_deltalake == [("a", 1, "x", 1, False), ("b", 5, "x", 2, False), ("b", 6, "x", 2, False)]


def test_a_version_taken_by_a_row_change_between_the_write_and_the_commit_is_planned_again(
        spark, tmp_path, monkeypatch):
    """A foreign commit that changes rows lands on the held table after Spark wrote the files:
    the commit of ours cannot take that version (created only if absent) nor go after it,
    its files are deleted, and the ingest plans again from the new log; nothing is doubled
    or lost."""
    from waterline.engine.ingest.ingest import ingest

    spec = _held_with_one_row(spark, tmp_path)
    tokens = _foreign_commit_after_the_write(spark, monkeypatch, "DELETE FROM {held} WHERE id = 1")
    write_partition(tmp_path, "b", [_row(5), _row(6)])
    result = ingest(spark, spec, "b", clock=far_future_clock())
    assert len(tokens) == 2 and result.seq == 2 and result.inserted == 2
    assert not Path(spec.held_path, STAGE_DIR, tokens[0]).exists()
    by_spark, by_deltalake = _held_rows(spark, spec)
    assert by_spark == by_deltalake == [("b", 5, "x", 2, False), ("b", 6, "x", 2, False)]


def test_a_task_attempt_that_did_not_commit_is_neither_checked_nor_published(spark, tmp_path, monkeypatch):
    """waterline's committer writes each task attempt into its own folder and marks the one
    that committed; an attempt left without the mark (a task that failed after writing, a
    killed speculative copy) holds the same rows again, and neither the key check nor the
    commit may count them."""
    from waterline.engine.delta.parquet_files import ATTEMPT_PREFIX, TASK_COMMITTED
    from waterline.engine.ingest import held_append
    from waterline.engine.ingest.ingest import ingest

    spec = _held_with_one_row(spark, tmp_path)
    real_write = held_append.write
    planted = []

    def write_then_a_failed_attempt_remains(versions, columns, held_path, token, partition):
        real_write(versions, columns, held_path, token, partition)
        folder = Path(held_append.folder(held_path, token, partition))
        attempts = [d for d in folder.iterdir() if d.name.startswith(ATTEMPT_PREFIX)]
        assert attempts and all((d / TASK_COMMITTED).exists() for d in attempts)  # the committer wrote them
        failed = folder / f"{ATTEMPT_PREFIX}0_0000_m_000000_9"
        failed.mkdir()
        for f in (f for d in attempts for f in d.glob("*.parquet")):
            (failed / f.name).write_bytes(f.read_bytes())
            planted.append(failed / f.name)

    monkeypatch.setattr(held_append, "write", write_then_a_failed_attempt_remains)
    write_partition(tmp_path, "b", [_row(5), _row(6)])
    result = ingest(spark, spec, "b", clock=far_future_clock())
    assert planted and result.inserted == 2
    by_spark, by_deltalake = _held_rows(spark, spec)
    assert by_spark == by_deltalake == [("a", 1, "x", 1, False), ("b", 5, "x", 2, False), ("b", 6, "x", 2, False)]


def test_a_spark_without_waterlines_committer_writes_with_hadoops(spark, tmp_path, monkeypatch, caplog):
    """A Spark Connect server or cluster started without waterline's jars has no committer
    class: the write says so once, the ingest (or the staged release) plans again with
    Hadoop's committer, and what it commits is the same."""
    from waterline.engine.delta.parquet_files import ATTEMPT_PREFIX
    from waterline.engine.spark import committer
    from waterline.engine.ingest.ingest import ingest
    from waterline.engine.spark.local_frames import LOCAL_ROWS_ENV
    from waterline.engine.release.release import release

    monkeypatch.setattr(committer, "COMMITTER", "dev.waterline.spark.NoSuchCommitter")
    monkeypatch.setattr(committer, "_missing", False)
    spec = _held_with_one_row(spark, tmp_path)
    for part, ids in (("b", (5, 6)), ("c", (7,))):
        write_partition(tmp_path, part, [_row(i) for i in ids])
        with caplog.at_level("WARNING", logger=committer.__name__):
            assert ingest(spark, spec, part, clock=far_future_clock()).inserted == len(ids)
    assert caplog.text.count("NoSuchCommitter") == 1
    staged = list(Path(spec.held_path, STAGE_DIR).rglob("*.parquet"))
    assert staged and not any(ATTEMPT_PREFIX in str(f) for f in staged)
    by_spark, by_deltalake = _held_rows(spark, spec)
    assert by_spark == by_deltalake == [("a", 1, "x", 1, False), ("b", 5, "x", 2, False), ("b", 6, "x", 2, False),
                                        ("c", 7, "x", 3, False)]

    monkeypatch.setattr(committer, "_missing", False)  # now a staged release meets it first
    monkeypatch.setenv(LOCAL_ROWS_ENV, "0")  # its files written by Spark, not from the driver (`local_frames`)
    with caplog.at_level("WARNING", logger=committer.__name__):
        release(spark, spec, as_of_us=far_future_clock().now_us())
    assert caplog.text.count("NoSuchCommitter") == 2
    for tier in TIERS:
        tier_files = TableLog.open(spec.tier_path(tier)).file_uris()
        assert tier_files and not any(ATTEMPT_PREFIX in uri for uri in tier_files)
        assert sorted(r.id for r in spark.read.format("delta").load(spec.tier_path(tier)).collect()) == [1, 5, 6, 7]


def test_checkpoints_and_log_cleanup_keep_the_transaction_the_state_and_the_statistics(spark, tmp_path):
    """A checkpoint at the table's interval (written by deltalake) and the cleanup of log files
    past the table's retention, as Spark does after its own commits; readers of the
    checkpoint still find the sequence, the state and the statistics, and Spark reads it."""
    from waterline.engine.ingest.ingest import ingest

    spec = make_spec(tmp_path, TIERS, partitions={"static": [f"p{i}" for i in range(8)]})
    write_partition(tmp_path, "p0", [_row(0)])
    ingest(spark, spec, "p0", clock=far_future_clock())
    spark.sql(f"ALTER TABLE delta.`{spec.held_path}` SET TBLPROPERTIES ('delta.checkpointInterval' = '2', "
              "'delta.logRetentionDuration' = 'interval 1 seconds', "
              "'delta.deletedFileRetentionDuration' = 'interval 1 seconds')")
    for i in range(1, 8):
        write_partition(tmp_path, f"p{i}", [_row(i, i % 60)])
        ingest(spark, spec, f"p{i}", clock=far_future_clock())
    log_dir = Path(spec.held_path, "_delta_log")
    # The newest checkpoint stays; cleanup deletes the commits and checkpoints before an older one.
    assert (log_dir / f"{8:020d}.checkpoint.parquet").exists(), "no checkpoint at the interval"
    assert not (log_dir / f"{0:020d}.json").exists(), "the log was not cleaned up past its retention"
    held = TableLog.open(spec.held_path)
    assert feed_tables.held_state(held, spec.feed).seq == 8 == held.transaction_version(APP_SEQ)
    assert all(f.tau_min["d15"] is not None for f in feed_tables.held_files(held, spec.tiers))
    assert spark.read.format("delta").load(spec.held_path).count() == 8


@pytest.mark.parametrize("hash_as_text", [False, True])
def test_the_schemas_told_without_spark_are_the_ones_spark_analyses(spark, tmp_path, hash_as_text):
    """The ingest asks Spark for the output's schema once (each ask is a round trip under
    Spark Connect) and tells the rest: the parsed output's, and the stored versions' it
    compares with the held table before committing files of its own. Both must be exactly
    what Spark makes of the frames, for text, naive and zoned event times and for tiers of
    one and of several branches, new versions and diffs alike."""
    from waterline.engine.ingest import versions as V
    from waterline.engine.tables.schedule import compile_tiers
    from waterline.engine.ingest.validate import REASON, parse_event_time, parsed_schema, reason_column

    tiers = {**TIERS, "mixed": "(status = 'final' AND event_time + INTERVAL 5 SECONDS <= WATERLINE()) "
                                "OR status = 'preliminary'"}
    spec = make_spec(tmp_path, tiers)
    for kind in ("string", "timestamp", "timestamp_ntz"):
        raw = spark.sql(f"SELECT 1L AS id, CAST('2026-01-01 10:00:00' AS {kind}) AS event_time, 'final' AS status, "
                        "map('k', 1) AS m, named_struct('a', 1, 'b', 'x') AS s")
        parsed = parse_event_time(spec, raw)
        told = parsed_schema(spec, raw.schema)
        assert [(f.name, f.dataType) for f in told] == [(f.name, f.dataType) for f in parsed.schema], kind
        payload = list(raw.columns)
        plans = compile_tiers(spark, spec, parsed.select(payload))
        rows = parsed.withColumn(REASON, reason_column(spec, None))
        schema = rows.schema
        tagged = V.tagged(rows, schema, payload, "a", plans, seq=7, hash_as_text=hash_as_text)
        columns = V.version_columns(payload, spec.tiers)
        stored = V.stored_schema(schema, payload, spec.tiers, hash_as_text=hash_as_text)
        for frame in (V.new_versions(tagged, columns), _diff_against_nothing(spark, spec, tagged, columns)):
            analysed = [(f.name, f.dataType.simpleString()) for f in frame.drop(V.KIND).schema]
            assert [(f.name, f.dataType.simpleString()) for f in stored] == analysed, kind


def _diff_against_nothing(spark, spec, tagged, columns):
    """`versions.diff` needs a held table to diff against: one row of the same columns."""
    from waterline.engine.ingest import versions as V

    seed = V.new_versions(tagged, columns).drop(V.KIND)
    seed.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(spec.held_path)
    return V.diff(spark, spec, tagged, columns, "a", seq=8)
