"""Small reads and writes of a release done on the driver, not by Spark jobs.

A release of a stream's batch or of a sensor's tick reads a handful of held files (its
candidates, chosen by statistics) and rewrites a handful of tier files. Spark reading
them through Delta rebuilds each table's snapshot and filters its files in jobs of
its own, and each write is a job: about two thirds of a small release's time. Here
the files are read with pyarrow (`waterline.engine.delta.arrow_files`), given to Spark
as a local relation, so the release's plan (the same DataFrame code) runs over them
without a scan, and its output is collected as Arrow and written as files waterline
commits. Above `local_rows()` rows the Spark path reads and writes as before: the
driver holds what it reads.
"""

from __future__ import annotations

import os
from typing import Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, DataType, MapType, StringType, StructField, StructType

from waterline.engine.delta.arrow_files import DataFile, read_files, read_matching, write_partitioned
from waterline.errors import WaterlineError

#: The environment variable that sets `local_rows` (0: every release reads and writes with Spark).
LOCAL_ROWS_ENV = "WATERLINE_LOCAL_ROWS"
DEFAULT_LOCAL_ROWS = 200_000


def local_rows() -> int:
    """The most rows a release reads into the driver from one table for one tier."""
    text = os.environ.get(LOCAL_ROWS_ENV, "").strip()
    if not text:
        return DEFAULT_LOCAL_ROWS
    try:
        value = int(text)
    except ValueError:
        raise WaterlineError(f"{LOCAL_ROWS_ENV}={text!r}: not a whole number of rows") from None
    if value < 0:
        raise WaterlineError(f"{LOCAL_ROWS_ENV}={text!r}: a number of rows cannot be negative")
    return value


def fits(rows: int | None) -> bool:
    """Whether a read of ``rows`` rows (None: unknown, a file without statistics) is local."""
    limit = local_rows()
    return rows is not None and limit > 0 and rows <= limit


def local_frame(spark: SparkSession, table: str, files: Sequence[DataFile], schema: StructType, *,
                file_column: str | None = None) -> DataFrame:
    """``files`` of ``table`` as a DataFrame of ``schema`` (the table's), read on the driver;
    with ``file_column``, each row's file URI in that column."""
    schema = nullable(schema)
    rows = read_files(table, files, to_arrow_schema(schema, timezone="UTC"), file_column=file_column)
    if file_column:
        schema = StructType([*schema.fields, StructField(file_column, StringType(), True)])
    return spark.createDataFrame(rows, schema=schema)


def local_lookup(spark: SparkSession, table: str, files: Sequence[DataFile], schema: StructType,
                 keys: pa.Table) -> DataFrame:
    """The rows of ``files`` (``schema``'s columns, a subset of the table's) whose key columns
    (``keys``' names) hold a row of ``keys``, read on the driver one file at a time."""
    schema = nullable(schema)
    rows = read_matching(table, files, to_arrow_schema(schema, timezone="UTC"), keys)
    return spark.createDataFrame(rows, schema=schema)


def nullable(schema: StructType) -> StructType:
    """``schema`` with every field and element nullable: a NULL struct stores its fields as
    NULLs, which Arrow will not read into a non-nullable field."""
    return StructType([StructField(f.name, _nullable_type(f.dataType), True, f.metadata) for f in schema.fields])


def _nullable_type(kind: DataType) -> DataType:
    if isinstance(kind, StructType):
        return nullable(kind)
    if isinstance(kind, ArrayType):
        return ArrayType(_nullable_type(kind.elementType), True)
    if isinstance(kind, MapType):
        return MapType(kind.keyType, _nullable_type(kind.valueType), True)
    return kind


def collect_arrow(rows: DataFrame) -> pa.Table:
    """``rows`` (few) collected as Arrow, every field nullable: PySpark's ``toArrow`` fails on
    a NULL struct whose fields are not (a removal's row hash)."""
    relaxed = [F.col(f"`{f.name}`").cast(_nullable_type(f.dataType)).alias(f.name) for f in rows.schema.fields]
    return rows.select(*relaxed).toArrow()


def write_local(rows: DataFrame, root: str, *, partition_by: str) -> int:
    """Collect ``rows`` (few, see `local_rows`) and write them under ``root`` partitioned by
    ``partition_by``, as `waterline.engine.spark.committer.write_parquet` would; the number
    of files."""
    return write_partitioned(collect_arrow(rows), root, partition_by=partition_by)


__all__ = [
    "DEFAULT_LOCAL_ROWS", "LOCAL_ROWS_ENV", "collect_arrow", "fits", "local_frame", "local_lookup", "local_rows",
    "nullable", "write_local",
]
