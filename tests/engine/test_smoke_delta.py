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
