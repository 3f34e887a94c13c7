"""Dagster metadata for waterline results: numbers as numbers, instants as timestamps."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from dagster import MetadataValue, TableColumn, TableSchema

from waterline.engine.core.results import IngestResult, TierRelease
from waterline.engine.core.status import FeedStatus
from waterline.feed import Feed
from waterline.semantics import NEG_INF, POS_INF


def timestamp(us: int | None, *, now_us: int | None = None):
    """A Dagster timestamp for an instant in µs; -inf ("due now") becomes ``now_us``."""
    if us is None or us >= POS_INF:
        return None
    if us <= NEG_INF:
        if now_us is None:
            return None
        us = now_us
    return MetadataValue.timestamp(us / 1_000_000)


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def table_metadata(feed: Feed, table: str, *, partitions: Sequence[str] | None = None) -> dict[str, Any]:
    """``dagster/uri``, ``dagster/column_schema`` and ``dagster/row_count`` (of ``partitions``
    only, when given) of one of the feed's tables, from its log."""
    summary = feed.table_summary(table, partitions=list(partitions) if partitions is not None else None)
    out: dict[str, Any] = {"dagster/uri": MetadataValue.path(summary.path)}
    if summary.exists:
        out["dagster/column_schema"] = TableSchema(columns=[TableColumn(name=n, type=t) for n, t in summary.columns])
    if summary.row_count is not None:
        out["dagster/row_count"] = MetadataValue.int(summary.row_count)
    return out


def stream_metadata(run: Any, state: FeedStatus, *, seconds: float) -> dict[str, Any]:
    """One drain of a stream feed's topics into ``[feed, "held"]`` (a `StreamRun`)."""
    applied = [b for b in run.batches if not b.skipped]

    def total(field: str) -> int:
        return int(sum(getattr(b, field) for b in applied))

    return {
        "batches": MetadataValue.int(len(applied)),
        "replays_skipped": MetadataValue.int(len(run.batches) - len(applied)),
        "records": MetadataValue.int(total("records")),
        "versions_written": MetadataValue.int(total("versions_written")),
        "inserted": MetadataValue.int(total("inserted")),
        "updated": MetadataValue.int(total("updated")),
        "removals": MetadataValue.int(total("removed")),
        "quarantined": MetadataValue.int(total("quarantined")),
        "releases": MetadataValue.int(len(run.releases)),
        "offsets": MetadataValue.json(run.offsets),
        "seq": MetadataValue.int(int(state.seq)),
        "ingest_seconds": MetadataValue.float(round(seconds, 3)),
    }


def ingest_metadata(
    feed: Feed, results: Sequence[IngestResult], state: FeedStatus, *, seconds: float
) -> dict[str, Any]:
    """One materialization of ``[feed, "held"]`` covering one or more partitions."""
    def total(field: str) -> int:
        return int(sum(getattr(r, field) for r in results))

    out: dict[str, Any] = {
        "partitions": MetadataValue.text(", ".join(r.partition for r in results)),
        "rows_read": MetadataValue.int(total("rows_read")),
        "versions_written": MetadataValue.int(total("versions_written")),
        "inserted": MetadataValue.int(total("inserted")),
        "updated": MetadataValue.int(total("updated")),
        "removals": MetadataValue.int(total("removed")),
        "unchanged": MetadataValue.int(total("unchanged")),
        "quarantined": MetadataValue.int(total("quarantined")),
        "late_dropped": MetadataValue.int(total("late_dropped")),
        "seq": MetadataValue.int(int(state.seq)),
        "pending": MetadataValue.int(max((t.pending for t in state.tiers.values()), default=0)),
        "ingest_seconds": MetadataValue.float(round(seconds, 3)),
    }
    for tier, status in state.tiers.items():
        out[f"pending/{tier}"] = MetadataValue.int(int(status.pending))
    dues = [t.next_due_us for t in state.tiers.values() if t.next_due_us is not None and not t.hold]
    _put(out, "next_due", timestamp(min(dues), now_us=state.now_us) if dues else None)
    if state.event_w_us is not None:
        _put(out, "event_waterline", timestamp(state.event_w_us))
    out.update(table_metadata(feed, "held", partitions=[r.partition for r in results]))
    if len(results) > 1:
        out["per_partition"] = MetadataValue.json(
            {r.partition: {k: v for k, v in r.to_dict().items() if k not in ("feed", "partition")} for r in results}
        )
    return out


def release_metadata(
    feed: Feed, tier: str, result: TierRelease, *, now_us: int, seconds: float
) -> dict[str, Any]:
    """One materialization of ``[feed, tier]``: W_T and what the release did."""
    w = result.w_us
    finite = w is not None and NEG_INF < w < POS_INF
    out: dict[str, Any] = {}
    _put(out, "W_T", timestamp(w) if finite else None)
    if finite:
        out["W_T_us"] = MetadataValue.int(int(w))
        out["lag_seconds"] = MetadataValue.float(round((now_us - w) / 1_000_000, 3))
    if result.previous_w_us is not None:
        _put(out, "previous_W_T", timestamp(result.previous_w_us))
    out.update({
        "released": MetadataValue.int(result.released),
        "updated": MetadataValue.int(result.updated),
        "removed": MetadataValue.int(result.removed),
        "expired": MetadataValue.int(result.expired),
        "held": MetadataValue.bool(bool(result.held)),
        "changed": MetadataValue.bool(bool(result.changed)),
        "seq": MetadataValue.int(int(result.seq)),
        "release_seconds": MetadataValue.float(round(seconds, 3)),
        "policy": MetadataValue.text(feed.tiers[tier]),
    })
    _put(out, "next_due", timestamp(result.next_due_us, now_us=now_us))
    out.update(table_metadata(feed, tier))
    return out


def check_metadata(values: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, bool):
            out[key] = MetadataValue.bool(value)
        elif isinstance(value, int):
            out[key] = MetadataValue.int(value)
        elif isinstance(value, float):
            out[key] = MetadataValue.float(value)
        elif value is not None:
            out[key] = value
    return out
