"""Stream ingest in the oracle: the versions one micro-batch of records appends.

:func:`stream_batch` is each key's last record in the batch (:func:`collapse`, by source
partition and offset) upserting or removing that key; a record equal to the current
version appends nothing. Re-exported by `waterline.semantics`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Iterable, Mapping


@dataclass(frozen=True)
class StreamRecord:
    """One record of a stream source, as the feed's transform mapped it.

    ``key``: the row's key (its identity over the whole feed, whatever its partition).
    ``partition``: the held partition the row belongs to (spec ``partition_by``, from the
    row); ``payload``: the row, or None for a removal (a tombstone, or ``remove_when``).
    ``source_partition`` and ``offset`` order the records (Kafka's partition and offset).
    """

    key: Hashable
    partition: str | None
    payload: Mapping | None
    source_partition: int
    offset: int


def collapse(records: Iterable[StreamRecord]) -> dict[Hashable, StreamRecord]:
    """The last record of each key in one batch, by (source partition, offset)."""
    last: dict[Hashable, StreamRecord] = {}
    for r in sorted(records, key=lambda r: (r.source_partition, r.offset)):
        last[r.key] = r
    return last


def stream_batch(
    current: Mapping[Hashable, tuple[str, Mapping]], records: Iterable[StreamRecord]
) -> list[tuple[tuple[str, Hashable], Mapping | None]]:
    """The held versions one batch of stream records appends (all with the batch's one seq),
    as ``((partition, key), payload or None)``; ``current`` maps each present key to the
    ``(partition, payload)`` of its current version.

    Each key's last record (`collapse`) is an upsert or a removal of that key, never the
    replacement of a partition: a key absent from the batch keeps its version. A record
    equal to the current version appends nothing, nor does the removal of an absent key.
    A row whose partition changed (a correction moving its event time to another day) is
    a removal in its old partition and a version in the new one, so a key is present in at
    most one partition.
    """
    out: list[tuple[tuple[str, Hashable], Mapping | None]] = []
    for key, r in collapse(records).items():
        now = current.get(key)
        if r.payload is None:
            if now is not None:
                out.append(((now[0], key), None))
            continue
        if r.partition is None:
            raise ValueError(f"record of key {key!r} has a row but no partition")
        if now is not None and now[0] == r.partition and dict(now[1]) == dict(r.payload):
            continue
        if now is not None and now[0] != r.partition:
            out.append(((now[0], key), None))
        out.append(((r.partition, key), dict(r.payload)))
    return out


def stream_current(
    current: Mapping[Hashable, tuple[str, Mapping]], appended: Iterable[tuple[tuple[str, Hashable], Mapping | None]]
) -> dict[Hashable, tuple[str, Mapping]]:
    """``current`` after a batch appended the versions ``appended`` (from `stream_batch`)."""
    after = dict(current)
    for (partition, key), payload in appended:
        if payload is None:
            if key in after and after[key][0] == partition:  # not the new partition's version of a move
                del after[key]
        else:
            after[key] = (partition, payload)
    return after
