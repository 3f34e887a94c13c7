"""Proves the locally resolved Delta jars work: write, MERGE, read history."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_delta_write_merge_history(spark, tmp_path):
    from delta.tables import DeltaTable

    path = str(tmp_path / "smoke")
    spark.createDataFrame([(1, "a"), (2, "b")], "id INT, v STRING").write.format("delta").save(path)
    updates = spark.createDataFrame([(2, "B"), (3, "c")], "id INT, v STRING")
    (
        DeltaTable.forPath(spark, path).alias("t")
        .merge(updates.alias("u"), "t.id = u.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert rows == [(1, "a"), (2, "B"), (3, "c")]
    ops = [r["operation"] for r in DeltaTable.forPath(spark, path).history().orderBy("version").collect()]
    assert ops == ["WRITE", "MERGE"]


def test_the_test_session_evaluates_sql_interpreted(spark):
    """tests/jvm.py's `INTERPRETED` reached this process's session (the suite's CPU depends on
    it); the cluster and Connect runs check the opposite (test_mode_scenario.py)."""
    from tests.jvm import sql_flags

    expected = ("false", "NO_CODEGEN") if sql_flags() else ("true", "FALLBACK")
    assert (spark.conf.get("spark.sql.codegen.wholeStage"), spark.conf.get("spark.sql.codegen.factoryMode")) == expected
