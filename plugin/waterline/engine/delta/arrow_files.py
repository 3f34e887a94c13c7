"""A few of a Delta table's data files read into Arrow, and Arrow rows written as files a
commit of waterline's names. No JVM.

A release whose candidates are few (a stream's batch, a sensor's tick) need not pay
for Spark reading the tables: Delta's snapshot rebuild and file filtering are Spark
jobs, and so is each write. `waterline.engine.spark.local_frames` reads the files
statistics single out with `read_files`, hands them to Spark as a local relation (the
release's plan is the same code), and writes its output with `write_partitioned`,
in the layout `waterline.engine.delta.parquet_files.data_files` reads as committed
(a task attempt's folder with its commit marker), so the commit is the one Spark's
files would get.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Mapping, Sequence
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from waterline.engine.core.arrow_keys import matching_rows
from waterline.engine.delta import storage
from waterline.engine.delta.file_stats import write_parquet
from waterline.engine.delta.objects import create_if_absent
from waterline.engine.delta.parquet_files import ATTEMPT_PREFIX, TASK_COMMITTED, partition_folder


@dataclass(frozen=True)
class DataFile:
    """A data file as the table's log names it: ``path`` relative to the table, URL-encoded."""

    path: str
    partition_values: Mapping[str, str | None]

    def uri(self, table: str) -> str:
        return storage.join(table, unquote(self.path))


def read_files(table: str, files: Sequence[DataFile], schema: pa.Schema, *,
               file_column: str | None = None) -> pa.Table:
    """The rows of ``files`` under ``table`` as ``schema`` has them: partition columns from
    the log's values, a column a file lacks (written before it was added) as nulls, and,
    with ``file_column``, each row's file URI (as Spark's ``_metadata.file_path``)."""
    out_schema = pa.schema([*schema, pa.field(file_column, pa.string())]) if file_column else schema
    fs, base = storage.arrow_filesystem(table)
    return _one_chunk([_read_one(fs, base, table, f, schema, file_column) for f in files], out_schema)


def read_matching(table: str, files: Sequence[DataFile], schema: pa.Schema, keys: pa.Table) -> pa.Table:
    """The rows of ``files`` (as `read_files` gives them, ``schema``'s columns only) whose
    values in ``keys``' columns are a row of ``keys``: a key lookup that holds one file's
    columns at a time, not the table's."""
    fs, base = storage.arrow_filesystem(table)
    return _one_chunk([_matching(_read_one(fs, base, table, f, schema, None), keys) for f in files], schema)


def rows_matching(rows: pa.Table, keys: pa.Table) -> pa.Table:
    """The rows of ``rows`` whose values in ``keys``' columns are a row of ``keys``, keys
    equal as in Spark's join (`read_matching` over rows already read)."""
    return _one_chunk([_matching(rows, keys)], rows.schema)


def _one_chunk(parts: list[pa.Table], schema: pa.Schema) -> pa.Table:
    """``parts`` as one table of one chunk per column, even when empty (PySpark's
    ``createDataFrame`` rebuilds a timestamp column from its chunks, and fails on none)."""
    rows = pa.concat_tables(parts).combine_chunks() if parts else schema.empty_table()
    if rows.num_rows == 0:
        return pa.Table.from_arrays([pa.array([], f.type) for f in schema], schema=schema)
    return rows


def _matching(rows: pa.Table, keys: pa.Table) -> pa.Table:
    # a semi join: ``keys`` need not be distinct, and are cast to the rows' types there
    return rows.take(matching_rows(rows, keys, keys.column_names))


def _read_one(fs: Any, base: str, table: str, f: DataFile, schema: pa.Schema, file_column: str | None) -> pa.Table:
    """One file's rows; ``fs`` and ``base``: the table's filesystem and its path there."""
    with fs.open_input_file(f"{base.rstrip('/')}/{unquote(f.path)}") as handle:
        parquet = pq.ParquetFile(handle)
        present = set(parquet.schema_arrow.names)
        stored = parquet.read(columns=[field.name for field in schema if field.name in present])
    n = stored.num_rows
    columns, fields = [], list(schema)
    for field in fields:
        if field.name in f.partition_values:
            columns.append(pa.array([f.partition_values[field.name]] * n, pa.string()).cast(field.type))
        elif field.name in present:
            columns.append(stored.column(field.name).cast(field.type))
        else:
            columns.append(pa.nulls(n, field.type))
    if file_column:
        columns.append(pa.array([f.uri(table)] * n, pa.string()))
        fields.append(pa.field(file_column, pa.string()))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def write_partitioned(rows: pa.Table, root: str, *, partition_by: str) -> int:
    """Write ``rows`` under ``root`` as one Parquet file per value of ``partition_by`` (the
    column left out of the files, its value in the folder's name, as Spark writes a
    partitioned table), inside one task attempt's folder marked committed once every file
    is written. Returns the number of files."""
    if rows.num_rows == 0:
        return 0
    attempt = f"{ATTEMPT_PREFIX}{uuid.uuid4().hex}"
    fs, base = storage.arrow_filesystem(root)
    data = rows.drop_columns([partition_by])
    values = rows.column(partition_by)
    written = 0
    for value in pc.unique(values).to_pylist():
        if value is None:
            raise ValueError(f"{root}: a row without a value of the partition column {partition_by}")
        folder = f"{base.rstrip('/')}/{attempt}/{partition_folder(partition_by, value)}"
        if not storage.is_s3(root):  # S3 has no folders to create
            fs.create_dir(folder, recursive=True)
        # the footer says which float columns hold no NaN (`file_stats.write_parquet`)
        write_parquet(data.filter(pc.equal(values, value)),
                       f"{folder}/part-{written:05d}-{uuid.uuid4()}.c000.snappy.parquet",
                       filesystem=fs, compression="snappy")
        written += 1
    create_if_absent(storage.join(root, attempt, TASK_COMMITTED), b"")
    return written


__all__ = ["DataFile", "read_files", "read_matching", "rows_matching", "write_partitioned"]
