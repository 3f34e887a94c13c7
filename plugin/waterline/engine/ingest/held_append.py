"""Held appends as files Spark writes and one commit waterline writes.

Spark's Delta append carrying a transaction id (``waterline.seq``, the fence
that makes a replayed or stale append skip) first computes the held table's
whole state to look that id up: three Spark jobs before every ingest's write,
about 0.4 s (docs/benchmarks-history.md, 2026-11-25). So, as releases do, an ingest has Spark write
the versions as Parquet files under ``<held>/wl-staged/<token>/data/``, which
no reader sees, and commits them itself: the add actions with statistics from
the files' footers (for the columns the held table keeps statistics for), the
transaction and the state, in one commit file created only if absent
(`waterline.engine.delta.commit.commit_append`). The transaction id is
checked against the log the ingest read under the feed lease, without a JVM.

A held table whose Delta protocol that writer does not honour, or whose schema
the versions do not match exactly, takes Spark's Delta writer instead
(`direct_unsupported`); so does the ingest that creates the held table.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from waterline.engine.core import columns as C
from waterline.engine.core.keys import duplicate_keys_error
from waterline.engine.core.races import SkippedCommit
from waterline.engine.core.state import HeldState
from waterline.engine.delta import storage
from waterline.engine.delta.arrow_files import write_partitioned as write_partitioned_arrow
from waterline.engine.delta.commit import FileActions, append_commit, table_unsupported, write_commit
from waterline.engine.delta.gate import warn_slow_path
from waterline.engine.delta.parquet_files import data_files, partition_folder, stats_columns, written_files
from waterline.engine.delta.stages import STAGE_DIR, discard_stage
from waterline.engine.ingest.appended_keys import duplicate_keys
from waterline.engine.delta.table_log import APP_SEQ, TableLog
from waterline.engine.spark.committer import write_parquet
from waterline.engine.tables.spark_tables import table_schema
from waterline.engine.ingest.validate import check_duplicates
from waterline.spec import FeedSpec

log = logging.getLogger(__name__)


def direct_unsupported(held_log: TableLog, schema: StructType) -> str | None:
    """Why versions of ``schema`` cannot be appended to the held table by `write`/`commit`
    (Spark's Delta writer must append them), or None."""
    reason = table_unsupported(held_log)
    if reason is not None:
        if held_log.exists:  # a table that is not there yet is created, not "written by Spark"
            warn_slow_path(held_log.path, reason)
        return reason
    held = {f.name: f.dataType.simpleString() for f in table_schema(held_log).fields}
    ours = {f.name: f.dataType.simpleString() for f in schema.fields}
    if held != ours:  # Spark's writer names the difference (or applies what Delta allows)
        return f"columns differ from the held table's: {sorted(set(held.items()) ^ set(ours.items()))}"
    return None


#: Writer options (beside `committer.write_parquet`'s committer). Where Spark has no such
#: class, Hadoop's committer with algorithm 2 moves each task's files once, not twice (on S3
#: every move is a copy), with no ``_SUCCESS`` marker. Parquet's version 2 pages
#: delta-encode the takeover and boundary columns: a 100k-row append is 25% smaller (4.6 MB,
#: not 6.1 MB) and 8% faster on s3proxy (docs/decisions.md "Held appends"). Held files are
#: waterline's own state; tier files, which consumers read, keep version 1.
_WRITE_OPTIONS = {"mapreduce.fileoutputcommitter.algorithm.version": "2",
                  "mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
                  "parquet.writer.version": "v2"}


def folder(held_path: str, token: str, partition: str) -> str:
    """Where the files of held append ``token`` (versions of ``partition``) are written before their commit."""
    return storage.join(held_path, _data(token), partition_folder(C.PARTITION, partition))


def _data(token: str) -> str:
    """The folder of append ``token``'s files, relative to the held table."""
    return f"{STAGE_DIR}/{token}/data"


def write(versions: DataFrame, columns: list[str], held_path: str, token: str, partition: str) -> None:
    """Spark writes ``versions`` (all of ``partition``; the held table's ``columns``) as Parquet
    files and commits nothing: a Delta reader sees none of them until `commit` names them.
    The files go straight into the partition's folder, without the partition column, as
    Delta stores them: a write partitioned by a column that has one value would still sort
    every row by it.

    Each task attempt's files stay in its own folder (`committer`); the first time this
    process meets a Spark without that committer, `SkippedCommit`: the ingest plans again."""
    files = versions.select(*[c for c in columns if c != C.PARTITION])
    # "append": the folder is new (a fresh token), so Spark need not check that it is absent
    write_parquet(files, folder(held_path, token, partition), mode="append", options=_WRITE_OPTIONS)


def write_partitioned(versions: DataFrame, columns: list[str], held_path: str, token: str) -> None:
    """`write` for versions of several partitions (a stream's micro-batch): Spark writes them
    under one folder per partition, which `commit` names with their partition values."""
    write_parquet(versions.select(*columns), storage.join(held_path, _data(token)), mode="append",
                  options=_WRITE_OPTIONS, partition_by=C.PARTITION)


def write_arrow(versions: pa.Table, columns: list[str], held_path: str, token: str) -> None:
    """`write_partitioned` for versions collected on the driver (a small batch): written from
    there, in the layout `commit` reads as committed (`arrow_files.write_partitioned`)."""
    write_partitioned_arrow(versions.select(columns), storage.join(held_path, _data(token)), partition_by=C.PARTITION)


def check_keys(spark: SparkSession, spec: FeedSpec, token: str, partition: str, key: StructType) -> None:
    """Raise the duplicate-key error if the files `write` wrote for ``token`` hold an identity
    twice. The key columns (``key``: as the output names and types them) are read from the
    files, so the check sees exactly what the commit would publish and the feed's transform
    does not run again: with pyarrow in this process when they are small enough
    (`ingest.appended_keys`), else with Spark."""
    where = folder(spec.held_path, token, partition)
    found = duplicate_keys(where, key.fieldNames())
    if found is None:
        paths = [storage.join(where, f.relative) for f in data_files(where)]
        check_duplicates(spec, partition, spark.read.schema(key).parquet(*paths))
    elif found:
        raise duplicate_keys_error(spec.feed, partition, spec.key, found)


def commit(held_log: TableLog, state: HeldState, token: str, *, record_property: bool,
           stream_txn: tuple[str, int] | None = None, parameters: Mapping[str, str] | None = None) -> int:
    """Commit the files of ``token`` as the held table's next version: the adds (statistics
    from the footers), the transaction ``waterline.seq`` = ``state.seq`` and ``state``;
    after other writers' commits that kept every row, when there are some. ``stream_txn``:
    the (app, batch id) of the stream micro-batch these versions are, committed with them;
    ``parameters``: more of the commit's ``operationParameters``.

    Raises `SkippedCommit` when the sequence was used or another writer changed rows (the
    caller plans again): the staged files are deleted then, as no commit names them. A
    commit whose outcome the store never told (`OutcomeUnknown`) keeps them: it may have
    landed, and gc deletes them only if no commit carries ``token``."""
    snapshot = held_log.snapshot(apps=(stream_txn[0],) if stream_txn else ())
    columns = stats_columns(snapshot.metadata.configuration)
    files = written_files(held_log.path, _data(token), stats=True, columns=columns)
    adds = tuple(f.add_action() for f in files)
    metrics = {"numFiles": str(len(adds)), "numOutputRows": str(state.versions),
               "numOutputBytes": str(sum(f.size for f in files))}
    change = append_commit(FileActions(adds=adds, metrics=metrics), state, app=APP_SEQ,
                           partition_by=snapshot.metadata.partition_columns, record_property=record_property,
                           also_txns=(stream_txn,) if stream_txn else (), parameters=parameters)
    try:
        version = write_commit(snapshot, change)
    except SkippedCommit:
        discard(held_log.path, token)
        raise
    return version


def discard(held_path: str, token: str) -> None:
    """Delete the files of an append no commit names (best effort: gc deletes what this leaves)."""
    discard_stage(held_path, token)
