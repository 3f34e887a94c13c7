"""How many records a stream's micro-batch holds at most, read from Spark's checkpoint.

Spark writes micro-batch N's end offsets to ``<checkpoint>/offsets/N`` before it runs the
batch; the batch reads from batch N-1's end offsets (for the first batch: the initial
offsets the Kafka source wrote to ``sources/0/0``) to its own. The differences, summed
over the topics' partitions, bound the batch's records from above (a transaction marker
or a compacted record takes an offset and is no record). Known before any Spark job, the
bound lets a small batch be collected by its one job (`waterline.engine.ingest.stream.batch`).

Both files are Spark's ("v1", a line of batch metadata, then a line per source). The
bound is a hint: whatever cannot be read (another layout, a replayed checkpoint that
lost a file, a query with several sources) gives None, and the batch is counted by a
Spark job as before.
"""

from __future__ import annotations

import json
import logging

from waterline.engine.delta import storage
from waterline.engine.delta.objects import read_object

log = logging.getLogger(__name__)

#: The offset log's layout this module reads (Spark's `OffsetSeqLog` version 1).
_VERSION = "v1"


def batch_bound(checkpoint: str, batch_id: int) -> int | None:
    """At most how many records micro-batch ``batch_id`` of the query checkpointed at
    ``checkpoint`` reads (None: the checkpoint does not tell)."""
    try:
        end = _logged_offsets(checkpoint, batch_id)
        start = (_logged_offsets(checkpoint, batch_id - 1) if batch_id > 0
                 else _initial_offsets(checkpoint))
    except Exception as exc:  # noqa: BLE001 - a hint (a store's error, a layout not Spark's): never fails the batch
        log.debug("checkpoint %s: batch %s: no record bound (%s)", checkpoint, batch_id, exc)
        return None
    if end is None or start is None:
        return None
    return records_between(start, end)


def records_between(start: dict, end: dict) -> int | None:
    """The offsets from ``start`` to ``end`` (Kafka's ``{topic: {partition: offset}}``), summed
    over ``end``'s partitions; a partition ``start`` lacks (added since) counts from 0. None
    if an offset is not a position (Spark's -1/-2 stand for latest/earliest)."""
    total = 0
    for topic, partitions in end.items():
        began = start.get(topic, {})
        for partition, offset in partitions.items():
            first = began.get(partition, 0)
            if not isinstance(offset, int) or not isinstance(first, int) or offset < 0 or first < 0:
                return None
            total += max(offset - first, 0)
    return total


def _logged_offsets(checkpoint: str, batch_id: int) -> dict | None:
    """The end offsets Spark logged for ``batch_id`` (its query's only source)."""
    body = read_object(storage.join(checkpoint, "offsets", str(batch_id)))
    if body is None:
        return None
    lines = body.decode("utf-8").splitlines()
    if not lines or lines[0] != _VERSION or len(lines) != 3:  # version, metadata, one source
        return None
    return _offset_map(lines[2])


def _initial_offsets(checkpoint: str) -> dict | None:
    """The first batch's start: the offsets the Kafka source resolved when the query began."""
    body = read_object(storage.join(checkpoint, "sources", "0", "0"))
    if body is None:
        return None
    # Spark's Kafka source writes a NUL byte (kept from Spark 2.1's format), "v1", a newline,
    # then the offsets' JSON
    version, _, rest = body.decode("utf-8").lstrip("\0").partition("\n")
    if version.strip() != _VERSION:
        return None
    return _offset_map(rest.strip())


def _offset_map(text: str) -> dict | None:
    found = json.loads(text)
    if not isinstance(found, dict):
        return None
    return {topic: {str(p): o for p, o in parts.items()} for topic, parts in found.items()}


__all__ = ["batch_bound", "records_between"]
