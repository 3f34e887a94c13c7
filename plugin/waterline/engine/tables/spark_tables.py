"""Creating a feed's Delta tables (held, tiers) and reading them in Spark."""

from __future__ import annotations

import json
import re
from contextlib import ExitStack, contextmanager
from typing import Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    MapType,
    NumericType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from waterline.engine.core import columns as C
from waterline.engine.core import faults
from waterline.engine.core.sqltext import delta_path
from waterline.engine.core.state import HeldState, TierState
from waterline.engine.delta.actions import Protocol
from waterline.engine.delta.commit import state_text
from waterline.engine.delta.gate import OWN_TABLE_FEATURES
from waterline.engine.delta.new_table import create_table
from waterline.engine.delta.rebase import same_schema
from waterline.engine.delta.storage import is_delta_table, local_folder
from waterline.engine.delta.table_log import TableLog
from waterline.engine.spark.commits import cleared_conf, commit_state, temporary_conf
from waterline.engine.spark.local_frames import nullable
from waterline.errors import WaterlineError
from waterline.spec import FeedSpec

TIER_SYSTEM_COLUMNS = f"{C.PARTITION} STRING, {C.SEQ} BIGINT, {C.START} BIGINT, {C.END} BIGINT"
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DEFAULTS = "spark.databricks.delta.properties.defaults."
#: Tier tables keep Delta's change data feed (`Feed.changes`, Delta Sharing's change queries).
CHANGE_FEED = "delta.enableChangeDataFeed"
#: Property defaults of a new tier table beyond `own_table_defaults`: the change data feed from its first commit.
TIER_DEFAULTS = {"enableChangeDataFeed": "true"}
#: The protocol Spark's Delta writer (4.4) gives a new table with the change data feed on;
#: without it, (1, 2).
_CHANGE_FEED_PROTOCOL = Protocol(1, 7, writer_features=frozenset({"changeDataFeed", "invariants", "appendOnly"}))
# Characters Delta refuses in a column name unless the table maps columns.
_NAME_REFUSED = frozenset(" ,;{}()\n\t=")
# Types Delta keeps file statistics for (checked with Delta 4.4 and deltalake 1.6).
_STATS_TYPES = (NumericType, StringType, DateType, TimestampType, TimestampNTZType, BooleanType)


def held_stats_columns(spec: FeedSpec, schema: StructType | None = None) -> list[str]:
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


def _first_leaf(field: StructField) -> str | None:
    """`a.b.c`: the first field under a struct column, depth first, of a type Delta keeps
    statistics for, backquoted as needed; None if there is none."""
    if not isinstance(field.dataType, StructType):
        return None

    def search(f: StructField, path: list[str]) -> list[str] | None:
        if isinstance(f.dataType, StructType):
            for child in f.dataType.fields:
                if (found := search(child, [*path, f.name])) is not None:
                    return found
            return None
        if isinstance(f.dataType, _STATS_TYPES):
            return [*path, f.name]
        return None

    path = search(field, [])
    if path is None:
        return None
    return ".".join(p if _PLAIN.match(p) else "`" + p.replace("`", "``") + "`" for p in path)


@contextmanager
def own_table_defaults(spark: SparkSession, **defaults: str) -> Iterator[None]:
    """A table waterline creates inside this block has only features its own commit writer
    honours: session defaults that would turn on deletion vectors, row tracking or in-commit
    timestamps are set aside for the block (not written as ``false``: delta-rs cannot parse
    ``delta.enableRowTracking = false`` in a table's properties); ``defaults`` (property name
    without ``delta.`` -> value) are applied."""
    with ExitStack() as stack:
        for key in OWN_TABLE_FEATURES:
            stack.enter_context(cleared_conf(spark, _DEFAULTS + key.removeprefix("delta.")))
        for key, value in defaults.items():
            stack.enter_context(temporary_conf(spark, _DEFAULTS + key, value))
        yield


def creating_held_table(spark: SparkSession, spec: FeedSpec, schema: StructType | None = None):
    """A held table created inside this block (a context manager) keeps file statistics
    for the pruning columns only (see :func:`held_stats_columns`), and has the properties
    waterline's commit writer honours (`own_table_defaults`).

    Delta collects statistics on the first 32 columns by default, which a wide
    payload would fill before the system columns; releases depend on these.
    """
    return own_table_defaults(spark, dataSkippingStatsColumns=",".join(held_stats_columns(spec, schema)))


def payload_schema(of: DataFrame | StructType) -> StructType:
    """The payload columns (not `_wl_`) of a frame or a schema."""
    schema = of if isinstance(of, StructType) else of.schema
    return StructType([f for f in schema.fields if not C.is_system(f.name)])


def ensure_tier_tables(spark: SparkSession, spec: FeedSpec, payload: StructType,
                       tiers: list[str] | None = None) -> None:
    """Create missing tier tables, empty, so consumers can read them before any release
    (``tiers``: those the caller found missing; else each tier is checked)."""
    missing = tiers if tiers is not None else [t for t in spec.tiers if not is_delta_table(spec.tier_path(t))]
    if not missing:  # the usual case: no schema to parse (a round trip under Spark Connect)
        return
    system = StructType.fromDDL(TIER_SYSTEM_COLUMNS)
    schema = StructType(list(payload.fields) + list(system.fields))
    for i, tier in enumerate(missing):
        faults.boundary(faults.CREATE_TIER_BEFORE if i == 0 else faults.CREATE_BETWEEN_TIERS)
        create_own_table(spark, spec.tier_path(tier), schema, TierState(tier=tier, op="create"), **TIER_DEFAULTS)
    faults.boundary(faults.CREATE_TIER_AFTER)


def complete_tier_tables(spark: SparkSession, spec: FeedSpec, held_log: TableLog) -> list[str]:
    """Create the tier tables a feed with a held table lacks (a run killed between creating
    held and its tiers, or between two tiers), with held's payload columns; the tiers created.

    Every operation that runs under the feed lease and finds held (an ingest, a release, a
    stream's release) calls it first, so a feed never depends on the run that started creating
    its tables having finished; creation is "only if absent" (`create_own_table`), so a run
    that meets a table another created in the meantime goes on with it. No table missing: one
    existence check per tier (a log listing, on S3 a request), once per process and set of
    tiers: waterline never deletes a tier table, so a feed seen complete stays so."""
    if not held_log.exists:
        return []
    paths = tuple(spec.tier_path(t) for t in spec.tiers)
    if paths in _COMPLETE:
        return []
    missing = [t for t in spec.tiers if not is_delta_table(spec.tier_path(t))]
    if missing:
        ensure_tier_tables(spark, spec, payload_schema(table_schema(held_log)), tiers=missing)
    _COMPLETE.add(paths)
    return missing


#: The tier tables (their paths) `complete_tier_tables` saw or made complete in this process.
_COMPLETE: set[tuple[str, ...]] = set()


def create_own_table(spark: SparkSession, path: str, schema: StructType, state: HeldState | TierState,
                     **defaults: str) -> None:
    """Create the empty table at ``path`` (partitioned by the partition column), its first
    commit carrying ``state`` and the properties ``defaults`` (names without ``delta.``), as
    `own_table_defaults` has Spark's writer create it.

    Version 0 is written by waterline (`waterline.engine.delta.new_table`), as Spark's writer
    would write it for this schema (tests/engine/test_own_tables.py compares the two), unless
    the schema or the session asks for more than that: a type or a column name that needs a
    table feature, field metadata, or another ``spark.databricks.delta.properties.defaults.*``
    of the session's, which Spark's writer then applies as it always did.
    """
    if _spark_must_create(spark, schema):
        with commit_state(spark, state), own_table_defaults(spark, **defaults):
            (spark.createDataFrame([], schema).write.format("delta")
             .partitionBy(C.PARTITION).mode("error").save(path))  # "error": Connect knows no "errorifexists"
        return
    configuration = {f"delta.{k}": v for k, v in defaults.items()}
    schema_json = json.dumps(nullable(schema).jsonValue(), separators=(",", ":"))
    existing = create_table(
        path, schema_json=schema_json, operation="WRITE",
        protocol=_CHANGE_FEED_PROTOCOL if configuration.get(CHANGE_FEED) == "true" else Protocol(1, 2),
        partition_columns=(C.PARTITION,), configuration=configuration,
        parameters={"mode": "ErrorIfExists", "partitionBy": json.dumps([C.PARTITION])},
        user_metadata=state_text(state, tagged=True))
    if existing is not None and not (existing and same_schema(existing, schema_json)):
        raise WaterlineError(f"{path}: another writer created a table with other columns there first")
    if (folder := local_folder(path)) is not None:
        # the folder Spark's writer (Delta 4.4) makes beside version 0 for catalog-managed
        # commits: the table's layout stays the one Spark gives it (maintain keeps it)
        (folder / "_delta_log" / "_staged_commits").mkdir(exist_ok=True)


def _spark_must_create(spark: SparkSession, schema: StructType) -> bool:
    """Whether a new table of ``schema`` needs Spark's writer to create it (see `create_own_table`)."""
    if not _plain(schema):
        return True
    ours = {_DEFAULTS + key.removeprefix("delta.") for key in OWN_TABLE_FEATURES}
    return any(k.startswith(_DEFAULTS) and k not in ours for k in spark.conf.getAll)


def _plain(dt: DataType) -> bool:
    """Types that need no table feature, columns with plain names and no metadata."""
    if isinstance(dt, StructType):
        names = [f.name.lower() for f in dt.fields]
        return len(set(names)) == len(names) and all(
            not f.metadata and not (_NAME_REFUSED & set(f.name)) and _plain(f.dataType) for f in dt.fields)
    if isinstance(dt, ArrayType):
        return _plain(dt.elementType)
    if isinstance(dt, MapType):  # a nested key: Spark's writer makes its fields nullable, `nullable` does not
        nested_key = isinstance(dt.keyType, (StructType, ArrayType, MapType))
        return not nested_key and _plain(dt.keyType) and _plain(dt.valueType)
    if isinstance(dt, StringType):
        return dt.isUTF8BinaryCollation()
    return isinstance(dt, (NumericType, BinaryType, BooleanType, DateType, TimestampType))


def change_feed_enabled(log: TableLog) -> bool:
    """Whether the table has Delta's change data feed on (from the log, no JVM)."""
    return log.configuration.get(CHANGE_FEED, "").lower() == "true"


def ensure_change_feed(spark: SparkSession, path: str) -> bool:
    """The migration of tier tables created before they kept a change data feed: turn it on
    (a property-only commit, carrying no waterline state). True if it was turned on now.

    The release calls it under its lease before its MERGE, so the first release after an
    upgrade already lands in the feed; versions before it have no change data.
    """
    if not is_delta_table(path) or change_feed_enabled(TableLog.open(path)):
        return False
    spark.sql(f"ALTER TABLE {delta_path(path)} SET TBLPROPERTIES ('{CHANGE_FEED}' = 'true')")
    return True


def table_schema(log: TableLog) -> StructType:
    """A Delta table's schema as Spark types, from the log (no JVM, no data read)."""
    return StructType.fromJson(json.loads(log.schema_json()))


def read_delta(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.format("delta").load(path)
