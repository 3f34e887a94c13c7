"""The stream transform as waterline runs it: record columns appended, the view renamed."""

from __future__ import annotations

import sqlglot

from waterline.spec.stream_sql import record_select


def test_the_record_columns_and_the_removal_mark_are_appended():
    sql = record_select("SELECT CAST(key AS STRING) AS id FROM source", "value IS NULL")
    names = [e.alias_or_name for e in sqlglot.parse_one(sql, read="spark").expressions]
    assert names == ["id", "_wl_kafka_topic", "_wl_kafka_partition", "_wl_kafka_offset", "_wl_remove"]
    assert "COALESCE((value IS NULL), FALSE)" in sql


def test_a_batch_view_replaces_source_and_keeps_its_name_as_the_alias():
    sql = record_select("SELECT source.value.px AS px FROM source", None, views={"source": "_wl_source_1"})
    assert sql.endswith("FROM _wl_source_1 AS source")
    aliased = record_select("SELECT s.value AS v FROM source AS s", None, views={"source": "_wl_source_1"})
    assert aliased.endswith("FROM _wl_source_1 AS s")
    # a table of another catalog or database named source is not the view
    other = record_select("SELECT id FROM db.source", None, views={"source": "_wl_source_1"})
    assert other.endswith("FROM db.source")
