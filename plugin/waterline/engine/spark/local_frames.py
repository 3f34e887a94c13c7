"""The driver's side of a small release: how much it reads, and its rows in Spark's types.

A release of a stream's batch or of a sensor's tick reads a handful of held files (its
candidates, chosen by statistics) and rewrites a handful of tier files. Spark reading
them through Delta rebuilds each table's snapshot and filters its files in jobs of its
own, and each step of the plan is a job. Up to `local_rows()` rows, the files are read
with pyarrow (`waterline.engine.delta.arrow_files`) and the tier step computed on the
driver (`waterline.engine.release.step_files`); where Spark still plans over them (a tier
too large to read that way), they become a local relation here.
Above that limit the Spark path reads and writes as before: the driver holds what it reads.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from waterline.engine.delta.arrow_files import DataFile, read_files
from waterline.errors import WaterlineError

#: The environment variable that sets `local_rows` (0: every release reads and writes with Spark).
LOCAL_ROWS_ENV = "WATERLINE_LOCAL_ROWS"
#: A tier step is computed column-wise (`release.driver_step`): a 1M drain's release on the driver
#: left the drain 1.3-2 s shorter than through Spark (docs/decisions.md "A tier step on the
#: driver, column-wise").
DEFAULT_LOCAL_ROWS = 1_000_000
#: The most records a stream batch collects to the driver whatever `local_rows` says: every
#: record of it is held there at once, with its row hash and schedule, where a larger batch
#: is one Spark pass that keeps nothing (docs/decisions.md "A large batch in one pass").
BATCH_ROWS_CAP = 200_000
# Set around a stream batch that runs in a Spark Connect server's Python worker: the limit
# of the process that started the stream, not of the server's environment.
_LIMIT: ContextVar[int | None] = ContextVar("waterline_local_rows", default=None)


def local_rows() -> int:
    """The most rows a release reads into the driver from one table for one tier: the
    `LOCAL_ROWS_ENV` variable, or `DEFAULT_LOCAL_ROWS`; inside `limited_to`, its limit."""
    if (limit := _LIMIT.get()) is not None:
        return limit
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
    return _within(rows, local_rows())


@contextmanager
def limited_to(rows: int) -> Iterator[None]:
    """`local_rows` is ``rows`` in the block (in this thread and context), whatever the
    environment says."""
    token = _LIMIT.set(rows)
    try:
        yield
    finally:
        _LIMIT.reset(token)


def batch_rows() -> int:
    """The most records a stream batch brings to the driver: `local_rows`, at most `BATCH_ROWS_CAP`."""
    return min(local_rows(), BATCH_ROWS_CAP)


def batch_fits(records: int | None) -> bool:
    """Whether a stream batch of ``records`` records (None: unknown) is collected to the driver."""
    return _within(records, batch_rows())


def _within(rows: int | None, limit: int) -> bool:
    return rows is not None and limit > 0 and rows <= limit


def arrow_schema(schema: StructType) -> pa.Schema:
    """``schema`` (a table's) as Arrow reads its files on the driver: every field nullable."""
    return to_arrow_schema(nullable(schema), timezone="UTC")


def read_local(table: str, files: Sequence[DataFile], schema: StructType) -> pa.Table:
    """``files`` of ``table`` read on the driver as Arrow rows of ``schema`` (the table's)."""
    return read_files(table, files, arrow_schema(schema))


def spark_frame(spark: SparkSession, rows: pa.Table, schema: StructType) -> DataFrame:
    """Rows read on the driver (`read_local`) as a DataFrame of ``schema``: a local relation."""
    return spark.createDataFrame(rows, schema=nullable(schema))


def spark_schema(rows: pa.Table) -> StructType:
    """The Spark types of Arrow rows computed on the driver (to compare with a table's)."""
    return from_arrow_schema(rows.schema)


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
    a NULL struct whose fields are not (a removal's row hash). Only such columns are cast:
    each cast costs the driver a few round trips to the JVM, ~4 ms a column."""
    relaxed = {f.name: F.col(f"`{f.name}`").cast(kind) for f in rows.schema.fields
               if (kind := _nullable_type(f.dataType)) != f.dataType}
    return (rows.withColumns(relaxed) if relaxed else rows).toArrow()


__all__ = [
    "BATCH_ROWS_CAP", "DEFAULT_LOCAL_ROWS", "LOCAL_ROWS_ENV", "arrow_schema", "batch_fits", "batch_rows",
    "collect_arrow", "fits", "local_rows",
    "nullable", "read_local", "spark_frame", "spark_schema",
]
