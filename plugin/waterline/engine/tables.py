"""Creation and reading of a feed's Delta tables (held, tiers, quarantine)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from waterline.engine import columns as C
from waterline.engine.commits import (
    APP_SEQ, commit_state, latest_state, max_file_seq, table_exists, temporary_conf, transaction_version,
)
from waterline.errors import WaterlineError
from waterline.engine.storage import delta_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from waterline.spec import FeedSpec

TIER_SYSTEM_COLUMNS = f"{C.PARTITION} STRING, {C.SEQ} BIGINT, {C.START} BIGINT, {C.END} BIGINT"
INITIAL_TIER_STATE: dict[str, Any] = {"w": None, "seq": 0, "hold": False, "next_due": None, "pending": 0}
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_STATS_COLUMNS_DEFAULT = "spark.databricks.delta.properties.defaults.dataSkippingStatsColumns"


def held_stats_columns(spec: "FeedSpec", schema: "StructType | None" = None) -> list[str]:
    """The held columns releases prune by (ingest sequence, takeover and last boundary per
    tier), plus one leaf of every struct column of ``schema``.

    The leaves are there for the `deltalake` reader: given a statistics column
    list, it drops every statistic of a file when a struct column that the list
    leaves out comes before a listed one (measured with deltalake 1.6), and the
    release reads its file statistics with it.
    """
    columns = [C.SEQ] + [c for t in spec.tiers for c in (C.tau(t), C.last(t))]
    if schema is not None:
        columns += [leaf for f in schema.fields if (leaf := _first_leaf(f)) is not None]
    return columns


def _first_leaf(field) -> str | None:
    """`a.b.c`: the first field under a struct column, depth first, of a type Delta keeps
    statistics for (checked with Delta 4.4 and deltalake 1.6: numbers, text, dates, times,
    booleans), backquoted as needed; None if there is none."""
    from pyspark.sql.types import (
        BooleanType, DateType, NumericType, StringType, StructType, TimestampNTZType, TimestampType,
    )

    if not isinstance(field.dataType, StructType):
        return None

    def search(f, path):
        if isinstance(f.dataType, StructType):
            for child in f.dataType.fields:
                if (found := search(child, [*path, f.name])) is not None:
                    return found
            return None
        if isinstance(f.dataType, (NumericType, StringType, DateType, TimestampType, TimestampNTZType, BooleanType)):
            return [*path, f.name]
        return None

    path = search(field, [])
    if path is None:
        return None
    return ".".join(p if _PLAIN.match(p) else "`" + p.replace("`", "``") + "`" for p in path)


def creating_held_table(spark: "SparkSession", spec: "FeedSpec", schema: "StructType | None" = None):
    """A held table created inside this block (a context manager) keeps file statistics
    for the pruning columns only (see :func:`held_stats_columns`).

    Delta collects statistics on the first 32 columns by default, which a wide
    payload would fill before the system columns; releases depend on these.
    """
    return temporary_conf(spark, _STATS_COLUMNS_DEFAULT, ",".join(held_stats_columns(spec, schema)))


def held_state(spec: "FeedSpec") -> dict[str, Any]:
    """The held table's state: ingest sequence counter and event-time bookkeeping.

    The sequence is the greatest of the state's, the ``waterline.seq`` transaction
    version (kept across log cleanup) and, for tables written before that, the
    files' ``_wl_seq`` statistics. An existing table never starts again at 0.
    """
    path = spec.held_path
    state = latest_state(path)
    if state is None and not table_exists(path):
        return {"seq": 0, "sources": {}, "event_w": None, "n": 0}
    state = dict(state or {"sources": {}, "event_w": None})
    seqs = [state.get("seq"), transaction_version(path, APP_SEQ)]
    if seqs == [None, None]:
        seqs.append(max_file_seq(path))
    known = [s for s in seqs if s is not None]
    if not known:
        raise WaterlineError(
            f"feed {spec.feed}: held table {path} has no waterline state, transaction or sequence statistics; "
            "it was not written by waterline, or its log was rewritten"
        )
    state["seq"] = max(known)
    return state


def tier_state(spec: "FeedSpec", tier: str) -> dict[str, Any]:
    state = dict(INITIAL_TIER_STATE)
    state.update(latest_state(spec.tier_path(tier)) or {})
    return state


def payload_schema(df: "DataFrame") -> "StructType":
    from pyspark.sql.types import StructType

    return StructType([f for f in df.schema.fields if not C.is_system(f.name)])


def ensure_tier_tables(spark: "SparkSession", spec: "FeedSpec", payload: "StructType") -> None:
    """Create missing tier tables, empty, so consumers can read them before any release."""
    from pyspark.sql.types import StructType

    system = StructType.fromDDL(TIER_SYSTEM_COLUMNS)
    schema = StructType(list(payload.fields) + list(system.fields))
    for tier in spec.tiers:
        path = spec.tier_path(tier)
        if table_exists(path):
            continue
        with commit_state(spark, dict(INITIAL_TIER_STATE, tier=tier, op="create")):
            (
                spark.createDataFrame([], schema).write.format("delta")
                .partitionBy(C.PARTITION).mode("error").save(path)  # "error": Connect knows no "errorifexists"
            )


def table_schema(path: str) -> "StructType":
    """A Delta table's schema as Spark types, from the log (no JVM, no data read)."""
    import json
    from pyspark.sql.types import StructType

    return StructType.fromJson(json.loads(delta_table(path).schema().to_json()))


def read_delta(spark: "SparkSession", path: str) -> "DataFrame":
    return spark.read.format("delta").load(path)
