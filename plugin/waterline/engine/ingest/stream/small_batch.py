"""A small stream micro-batch: one Spark job, the rest on the driver.

A micro-batch of at most `local_frames.batch_rows()` records (bounded before any job by
the checkpoint's offsets, `waterline.engine.ingest.stream.offsets`, else counted) is
collected once: its rows through the transform, each with its partition, quarantine
reason, event time, row hash and schedule, and in the same job its records whose value
did not decode (the quarantine's, which the Spark path counts in a job of its own).
The partition check, the counts, each key's
last record and the diff against held's current versions then run in Python
(`waterline.engine.ingest.collected_versions`), where the Spark path of `stream.batch` spends
a job on each. Both follow `waterline.semantics.stream_batch`; the stream property test
draws one or the other per batch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from waterline.engine.core import columns as C
from waterline.engine.ingest.collected_versions import batch_counts, batch_versions, last_records, stamped
from waterline.engine.ingest.stream.batch_context import BatchContext
from waterline.engine.ingest.stream.held_keys import current_rows
from waterline.engine.delta.table_log import TableLog
from waterline.engine.spark.local_frames import arrow_schema, batch_rows, collect_arrow
from waterline.engine.ingest.stream.source import UNPARSED_REASON, UNPARSED_ROW
from waterline.engine.tables.spark_tables import table_schema
from waterline.engine.ingest.validate import REASON
from waterline.errors import SpecError
from waterline.spec import FeedSpec
from waterline.spec.stream_sql import RECORD_OFFSET, RECORD_PARTITION, RECORD_TOPIC, REMOVE

#: A collected row's event time in microseconds (for the event waterline).
EVENT_US = "_wl_event_us"
#: How many of held's versions the lookup keeps in memory per record a batch may collect
#: (`batch_rows`): five narrow columns, ~50 bytes a version, ~100 MB at the default.
KEPT_PER_LOCAL_ROW = 10
#: The order of a key's records in a batch: its last is the greatest.
RECORD_ORDER = (RECORD_TOPIC, RECORD_PARTITION, RECORD_OFFSET)
#: An unparsed record's reason and raw text among the collected rows (a row's own quarantine
#: reason is `REASON`, the name the quarantine gives both).
_UNPARSED = {UNPARSED_REASON: "_wl_unparsed_reason", UNPARSED_ROW: "_wl_unparsed_row"}


@dataclass(frozen=True)
class SmallBatch:
    """A collected batch, checked: what `stream.batch` writes and counts."""

    versions: pa.Table  # the held versions to append (`ingest.collected_versions.batch_versions`)
    invalid: pa.Table  # the rows to quarantine, with their reason (the prepared rows' columns)
    unparsed: pa.Table  # the records that did not decode, as quarantine rows (reason, raw text)
    stats: dict  # rows, quarantined, max_event ({source: micros} or {}), as `stream.batch_write.checked`


def collect_rows(spec: FeedSpec, rows: DataFrame, tags: Mapping[str, Column], later: Mapping[str, Column],
                 unparsed: DataFrame | None) -> pa.Table:
    """``rows`` (the prepared batch) with its event time and ``tags`` (row hash, schedule;
    ``later``: the schedule columns that read the first ones), and the ``unparsed`` records
    (`stream.source.BatchFrames.unparsed`) below them, in one Spark job. Tags are computed for
    valid rows that are no removal only: the others' are never read, and a policy need not be
    defined over a quarantined row. Both parts read the batch's one kept (persisted) decoding:
    Spark's block lock has the second wait for the first's, so Kafka is read once."""
    wanted = F.col(REASON).isNull() & ~F.col(REMOVE)
    wide = rows.withColumns({EVENT_US: F.unix_micros(F.col(spec.event_time)),
                             **{name: F.when(wanted, column) for name, column in tags.items()}})
    if later:
        wide = wide.withColumns({name: F.when(wanted, column) for name, column in later.items()})
    if unparsed is not None:
        marked = unparsed.select(*[F.col(name).alias(inside) for name, inside in _UNPARSED.items()])
        wide = wide.unionByName(marked, allowMissingColumns=True)
    return collect_arrow(wide)


def small_batch(ctx: BatchContext, collected: pa.Table, columns: Sequence[str], payload: Sequence[str]) -> SmallBatch:
    """The versions, quarantined rows and counts of a batch `collect_rows` collected
    (``columns``: the prepared rows'; the versions carry the batch's held sequence number)."""
    spec, source = ctx.spec, ctx.source
    unparsed = pa.table({name: pa.array([], pa.string()) for name in _UNPARSED})
    if _UNPARSED[UNPARSED_REASON] in collected.column_names:
        undecoded = pc.is_valid(collected.column(_UNPARSED[UNPARSED_REASON]))
        unparsed = collected.filter(undecoded).select(list(_UNPARSED.values())).rename_columns(list(_UNPARSED))
        collected = collected.filter(pc.invert(undecoded)).drop_columns(list(_UNPARSED.values()))
    rows, counts = batch_counts(collected, reason=REASON, remove=REMOVE, partition=C.PARTITION, event_us=EVENT_US,
                                bad_partition=partial(bad_partition, spec))
    valid = pc.is_null(rows.column(REASON))
    last = last_records(rows.filter(valid), spec.key, RECORD_ORDER)
    current = current_versions(spec, ctx.held_log, last.select(list(spec.key)))
    versions = stamped(batch_versions(last, current, list(spec.key), payload, list(spec.tiers), remove_column=REMOVE),
                       seq=ctx.seq, ingested_at_us=time.time_ns() // 1000)  # as current_timestamp(): the wall clock
    latest = counts["max_event"]
    stats = {**counts, "max_event": {} if latest is None else {source: latest}}
    return SmallBatch(versions=versions, invalid=rows.filter(pc.invert(valid)).select(list(columns)),
                      unparsed=unparsed, stats=stats)


def bad_partition(spec: FeedSpec, value: str) -> str | None:
    """Why ``partition_by``'s ``value`` is no partition of the spec's scheme (None: it is)."""
    try:
        spec.partitions.validate(value)
    except SpecError as exc:
        return f"partition_by gave {value!r}: {str(exc).rsplit(': ', 1)[-1]}"
    return None


def current_versions(spec: FeedSpec, held_log: TableLog, keys: pa.Table) -> pa.Table:
    """Held's rows of ``keys`` (key, seq, removed, hash, partition), looked up on the driver in
    the columns this process keeps of held's files (`held_keys`: only the files added since
    the last batch are read), at most `KEPT_PER_LOCAL_ROW` times `batch_rows()` rows kept."""
    schema = table_schema(held_log)
    wanted = StructType([schema[c] for c in dict.fromkeys([*spec.key, C.SEQ, C.REMOVED, C.HASH, C.PARTITION])])
    return current_rows(held_log, arrow_schema(wanted), keys, limit=KEPT_PER_LOCAL_ROW * batch_rows())


__all__ = ["EVENT_US", "RECORD_ORDER", "SmallBatch", "bad_partition", "collect_rows", "current_versions",
           "small_batch"]
