"""The tables waterline creates (held, tiers): version 0 written by waterline equals what Spark's
Delta writer writes for the same schema and properties, and every reader and writer takes it.

`tables.create_own_table` writes version 0 itself (a commit file, no Spark job) unless the
schema or the session's table defaults ask for what only Spark's writer does; these tests
hold it to Spark's own output, field by field, and then let Spark append, merge and read the
change feed of a table it did not create, and deltalake, polars and DuckDB read it.
"""

from __future__ import annotations

import json
import shutil

import pytest
from pyspark.sql.types import (
    ArrayType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from waterline.engine.core import columns as C
from waterline.engine.core.state import HeldState, TierState
from waterline.engine.delta.actions import CommitInfo, Metadata, Protocol, parse_commit
from waterline.engine.delta.table_log import TableLog, commit_path
from waterline.engine.tables import spark_tables as T
from waterline.engine.spark.commits import commit_state, temporary_conf
from waterline.errors import WaterlineError

pytestmark = pytest.mark.spark

NESTED = StructType([
    StructField("id", LongType(), False),
    StructField("s", StructType([StructField("a", IntegerType(), False),
                                 StructField("b", ArrayType(StringType(), False))])),
    StructField("m", MapType(StringType(), DoubleType(), False)),
    StructField("d", DecimalType(10, 2)),
    StructField("event_time", TimestampType()),
    StructField(C.PARTITION, StringType()),
])
CASES = {
    "held": (HeldState(op="create", token="t0"), {"dataSkippingStatsColumns": "id,s.a"}),
    "tier": (TierState(tier="t", op="create"), T.TIER_DEFAULTS),
}


def _version0(path: str) -> tuple[CommitInfo, Protocol, Metadata]:
    actions = parse_commit(open(commit_path(path, 0), "rb").read())
    assert not [a for a in actions if not isinstance(a, (CommitInfo, Protocol, Metadata))], actions
    [info] = [a for a in actions if isinstance(a, CommitInfo)]
    [protocol] = [a for a in actions if isinstance(a, Protocol)]
    [metadata] = [a for a in actions if isinstance(a, Metadata)]
    return info, protocol, metadata


def _spark_created(spark, path: str, schema: StructType, state, defaults: dict) -> None:
    """The table as Spark's writer creates it (what `create_own_table` did before it wrote version 0)."""
    with commit_state(spark, state), T.own_table_defaults(spark, **defaults):
        spark.createDataFrame([], schema).write.format("delta").partitionBy(C.PARTITION).mode("error").save(path)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_version_0_is_what_sparks_writer_writes(spark, tmp_path, kind):
    state, defaults = CASES[kind]
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    T.create_own_table(spark, ours, NESTED, state, **defaults)
    _spark_created(spark, theirs, NESTED, state, defaults)
    (info, protocol, metadata), (s_info, s_protocol, s_metadata) = _version0(ours), _version0(theirs)
    assert info.engine_info == "waterline"  # written by waterline, not by a Spark job
    assert protocol == s_protocol
    assert json.loads(metadata.schema_string) == json.loads(s_metadata.schema_string)
    assert (metadata.partition_columns, dict(metadata.configuration)) == \
        (s_metadata.partition_columns, dict(s_metadata.configuration))
    assert (info.operation, dict(info.operation_parameters), info.user_metadata, info.is_blind_append) == \
        (s_info.operation, dict(s_info.operation_parameters), s_info.user_metadata, s_info.is_blind_append)
    log = TableLog.open(ours)
    assert log.version == 0 and log.schema_json() == metadata.schema_string
    layout = {p.name for p in (tmp_path / "theirs" / "_delta_log").iterdir() if p.is_dir()}
    assert layout == {p.name for p in (tmp_path / "ours" / "_delta_log").iterdir() if p.is_dir()} == {"_staged_commits"}


def test_spark_appends_merges_and_reads_the_change_feed_of_a_table_waterline_created(spark, tmp_path):
    import polars as pl

    from tests.interop.test_readers import _duckdb
    from waterline.engine.delta.storage import delta_table

    path = str(tmp_path / "tier")
    schema = StructType([StructField("id", LongType()), StructField("v", StringType()),
                         StructField(C.PARTITION, StringType())])
    T.create_own_table(spark, path, schema, TierState(tier="t", op="create"), **T.TIER_DEFAULTS)
    assert spark.read.format("delta").load(path).count() == 0
    spark.createDataFrame([(1, "a", "p"), (2, "b", "p")], schema).write.format("delta").mode("append").save(path)
    spark.createDataFrame([(2, "B", "p"), (3, "c", "q")], schema).createOrReplaceTempView("wl_new_rows")
    spark.sql(f"MERGE INTO delta.`{path}` t USING wl_new_rows s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    changes = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
               .load(path).select("id", "v", "_change_type").collect())
    assert sorted((r.id, r.v, r._change_type) for r in changes) == [
        (1, "a", "insert"), (2, "B", "update_postimage"), (2, "b", "insert"), (2, "b", "update_preimage"),
        (3, "c", "insert")]
    expected = [(1, "a", "p"), (2, "B", "p"), (3, "c", "q")]
    duck = _duckdb()
    seen = {
        "spark": sorted(tuple(r) for r in spark.read.format("delta").load(path).collect()),
        "deltalake": sorted(tuple(r.values()) for r in delta_table(path).to_pyarrow_table().to_pylist()),
        "polars": sorted(pl.read_delta(path).select("id", "v", C.PARTITION).rows()),
        "duckdb": sorted(duck.execute(f"SELECT id, v, {C.PARTITION} FROM delta_scan('{path}')").fetchall()),
    }
    assert all(rows == expected for rows in seen.values()), seen


@pytest.mark.parametrize("field", [
    StructField("at", TimestampNTZType()),  # needs the timestampNtz feature
    StructField("c", StringType(), metadata={"comment": "kept by Spark"}),
    StructField("k", MapType(StructType([StructField("a", IntegerType(), False)]), LongType())),  # a nested map key
], ids=["timestamp_ntz", "field metadata", "struct map key"])
def test_a_schema_that_needs_more_than_version_0_is_created_by_spark(spark, tmp_path, field):
    schema = StructType([field, StructField(C.PARTITION, StringType())])
    path = str(tmp_path / "t")
    T.create_own_table(spark, path, schema, HeldState(op="create", token="t0"))
    info, _, metadata = _version0(path)
    assert info.engine_info != "waterline"
    assert json.loads(metadata.schema_string)["fields"][0]["name"] == field.name


@pytest.mark.parametrize("field", [
    StructField("a b", LongType()),  # a name only column mapping allows
    StructField("n", StringType("UTF8_LCASE")),  # a collation Delta 4.4's writer refuses
], ids=["spaced name", "collation"])
def test_a_column_delta_refuses_gets_sparks_refusal_not_a_table(spark, tmp_path, field):
    schema = StructType([field, StructField(C.PARTITION, StringType())])
    path = str(tmp_path / "t")
    with pytest.raises(Exception, match="invalid character|UNSUPPORTED_DATA_TYPES"):
        T.create_own_table(spark, path, schema, HeldState(op="create", token="t0"))
    assert not TableLog.open(path).exists


def test_a_session_table_default_sends_creation_to_spark_which_applies_it(spark, tmp_path):
    path = str(tmp_path / "t")
    with temporary_conf(spark, "spark.databricks.delta.properties.defaults.checkpointInterval", "7"):
        T.create_own_table(spark, path, NESTED, HeldState(op="create", token="t0"))
    info, _, metadata = _version0(path)
    assert info.engine_info != "waterline" and metadata.configuration.get("delta.checkpointInterval") == "7"


def test_a_table_someone_created_first_is_taken_if_its_columns_match_and_refused_if_not(spark, tmp_path):
    path = str(tmp_path / "t")
    T.create_own_table(spark, path, NESTED, TierState(tier="t", op="create"), **T.TIER_DEFAULTS)
    shutil.copytree(path, tmp_path / "copy")
    T.create_own_table(spark, path, NESTED, TierState(tier="t", op="create"), **T.TIER_DEFAULTS)  # same columns
    assert TableLog.open(path).version == 0
    other = StructType([StructField("x", LongType()), StructField(C.PARTITION, StringType())])
    with pytest.raises(WaterlineError, match="another writer created a table with other columns"):
        T.create_own_table(spark, str(tmp_path / "copy"), other, TierState(tier="t", op="create"))
