"""A partition's output as held versions: tagged rows, the diff against held, their counts.

A version is the payload plus the system columns (docs/engine.md, "Tables"):
the row hash, the partition, whether it is a removal, per tier its schedule
(visibility, takeover, last boundary), when it was ingested and its sequence.
``_wl_kind`` (insert, update, remove) rides along until the write, for the
counts, and is not stored.
"""

from __future__ import annotations

from typing import Mapping

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BooleanType, LongType, StringType, StructField, StructType, TimestampType

from waterline.engine.core import columns as C
from waterline.engine.core.races import new_token
from waterline.engine.ingest.collected_versions import KIND
from waterline.engine.spark import observed
from waterline.engine.ingest.profile import HashForm, row_hash
from waterline.engine.tables.schedule import removal_schedule, schedule_columns
from waterline.engine.ingest.source import SOURCE_COLUMN
from waterline.engine.tables.spark_tables import read_delta
from waterline.engine.ingest.validate import REASON
from waterline.policy import ReleasePlan
from waterline.semantics import NEG_INF
from waterline.spec import FeedSpec

VALID = f"{REASON} IS NULL"  # SQL text: a Column needs a running session


def tagged(rows: DataFrame, schema: StructType, payload: list[str], partition: str,
           plans: Mapping[str, ReleasePlan], *, seq: int, hash_as_text: bool | HashForm) -> DataFrame:
    """Every output row, valid or not, as a new version of it would be stored: the row hash,
    partition, schedule per tier, sequence (``hash_as_text``: a bool, or the `HashForm` with the
    columns apply added). The quarantine reason (and the source, when
    rows carry it) stay, for the filter and the profile. ``schema``: of ``rows``.

    One projection (two when a tier has several branches): each DataFrame step is an
    analysis of the whole plan on the driver, tens of milliseconds at this size."""
    form = hash_as_text if isinstance(hash_as_text, HashForm) else HashForm(as_text=hash_as_text)
    first, later = schedule_columns(plans)
    kept = [*payload, REASON, *([SOURCE_COLUMN] if SOURCE_COLUMN in schema.names else [])]
    out = rows.select(
        *kept,
        row_hash(schema, payload, as_text=form.as_text, added=form.added).alias(C.HASH),
        F.lit(partition).alias(C.PARTITION),
        F.lit(False).alias(C.REMOVED),
        F.lit("insert").alias(KIND),
        *[column.alias(name) for name, column in first.items()],
        F.current_timestamp().alias(C.INGESTED_AT),
        F.lit(seq).cast("bigint").alias(C.SEQ),
    )
    return out.withColumns(later) if later else out


def stored_schema(schema: StructType, payload: list[str], tiers, *, hash_as_text: bool) -> StructType:
    """The columns of a stored version (`version_columns` without the kind) and their types,
    told without asking Spark: the payload's from ``schema`` (the output's), the system
    columns' as `tagged`, `diff` and the removal schedule make them."""
    interval = StructType([StructField("start", LongType()), StructField("end", LongType())])
    system = {
        C.HASH: StringType() if hash_as_text else StructType([StructField("h1", LongType()),
                                                               StructField("h2", LongType())]),
        C.PARTITION: StringType(), C.REMOVED: BooleanType(),
        **{C.vis(t): ArrayType(interval) for t in tiers},
        **{c: LongType() for t in tiers for c in (C.tau(t), C.last(t))},
        C.INGESTED_AT: TimestampType(), C.SEQ: LongType(),
    }
    return StructType([schema[c] if c in payload else StructField(c, system[c])
                       for c in version_columns(payload, tiers) if c != KIND])


def version_columns(payload: list[str], tiers) -> list[str]:
    """The columns of a version: the payload, then the system columns in the held table's order."""
    schedule = [C.vis(t) for t in tiers] + [c for t in tiers for c in (C.tau(t), C.last(t))]
    return [*payload, C.HASH, C.PARTITION, C.REMOVED, KIND, *schedule, C.INGESTED_AT, C.SEQ]


def new_versions(rows: DataFrame, columns: list[str]) -> DataFrame:
    """A partition held has never seen: every valid row of `tagged`, as ``columns``."""
    return rows.filter(VALID).select(*columns)


def diff(spark: SparkSession, spec: FeedSpec, rows: DataFrame, columns: list[str], partition: str, *,
         seq: int) -> DataFrame:
    """Diff the partition's output (`tagged`) against its current versions in the held table:
    new and changed rows, and removals of the identities it no longer produces."""
    keys = list(spec.key)
    current = (
        read_delta(spark, spec.held_path)
        .filter(F.col(C.PARTITION) == partition)
        .groupBy(*keys)
        .agg(F.max_by(F.struct(F.col(C.HASH).alias("h"), F.col(C.REMOVED).alias("r")), F.col(C.SEQ)).alias("_cur"))
    )
    joined = new_versions(rows, columns).join(current, on=keys, how="full_outer")
    cur_live = F.col("_cur").isNotNull() & ~F.col("_cur.r")
    kind = (
        F.when(F.col(C.HASH).isNotNull() & ~cur_live, F.lit("insert"))
        .when(F.col(C.HASH).isNotNull() & (F.col(C.HASH) != F.col("_cur.h")), F.lit("update"))
        .when(F.col(C.HASH).isNull() & cur_live, F.lit("remove"))
    )
    changed = joined.withColumn(KIND, kind).filter(F.col(KIND).isNotNull()).drop("_cur")
    removals = removal_schedule(
        changed.filter(F.col(KIND) == "remove")
        .withColumn(C.PARTITION, F.lit(partition)).withColumn(C.REMOVED, F.lit(True)),
        spec.tiers,
    )
    upserts = changed.filter(F.col(KIND) != "remove")
    return _finish(upserts.unionByName(removals), seq).select(*columns)


def _finish(df: DataFrame, seq: int) -> DataFrame:
    return df.withColumns({C.INGESTED_AT: F.current_timestamp(), C.SEQ: F.lit(seq).cast("bigint")})


def nothing(spec: FeedSpec) -> dict:
    """The counts of an ingest that writes no version."""
    return {"total": 0, "insert": 0, "update": 0, "remove": 0, "min_tau": {t: None for t in spec.tiers}}


def _count_aggregates(spec: FeedSpec) -> list[Column]:
    aggs = [F.count(F.lit(1)).alias("total")]
    aggs += [F.count(F.when(F.col(KIND) == k, 1)).alias(k) for k in ("insert", "update", "remove")]
    return aggs + [F.min(C.tau(t)).alias(f"tau_{i}") for i, t in enumerate(spec.tiers)]


def _counts(spec: FeedSpec, row) -> dict:
    min_tau = {t: row[f"tau_{i}"] for i, t in enumerate(spec.tiers)}
    return {
        "total": row["total"], "insert": row["insert"], "update": row["update"], "remove": row["remove"],
        # A NEG_INF takeover (removal, recall) is due at once: keep it, the sensor clamps to now.
        "min_tau": {t: (v if v is None or v > NEG_INF else NEG_INF) for t, v in min_tau.items()},
    }


def arrow_counts(spec: FeedSpec, versions: pa.Table) -> dict:
    """`version_counts` of versions collected as Arrow (`KIND` and the takeover columns)."""
    kinds = versions.column(KIND).to_pylist() if versions.num_rows else []
    row = {"total": versions.num_rows, **{k: kinds.count(k) for k in ("insert", "update", "remove")}}
    row.update({f"tau_{i}": pc.min(versions.column(C.tau(t))).as_py() for i, t in enumerate(spec.tiers)})
    return _counts(spec, row)


def version_counts(spec: FeedSpec, versions: DataFrame) -> dict:
    """Versions by kind and each tier's earliest takeover among them (one Spark job)."""
    return _counts(spec, versions.agg(*_count_aggregates(spec)).collect()[0])


def observe_counts(spec: FeedSpec, versions: DataFrame) -> tuple[DataFrame, Observation]:
    """``versions`` observed: the action that writes them counts them too (`observed_counts`)."""
    observation = Observation(f"waterline_versions_{new_token()}")
    return versions.observe(observation, *_count_aggregates(spec)), observation


def observed_counts(spec: FeedSpec, observation: Observation, versions: DataFrame) -> dict:
    """The counts the write of `observe_counts`'s frame computed; counted apart when Spark
    reported none (classic Spark raises for a plan that read no file, Connect can return {})."""
    return _counts(spec, observed.counted(observation, versions, _count_aggregates(spec)))
