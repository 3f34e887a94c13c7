"""``responseformat=delta``: the same answers as Delta log actions, for kernel-based readers.

A client that asks for the Delta format (the official client's ``use_delta_format=True``,
readers built on delta-kernel) gets the table's protocol and metadata as Delta actions
(``deltaProtocol``, ``deltaMetadata``) and each file as the Delta action naming it
(``deltaSingleAction``: an ``add``, ``remove`` or ``cdc`` whose ``path`` is the signed URL), and
rebuilds a log from them. A client that accepts both formats gets parquet: every tier is
readable that way, and it is what every client reads.

What is not the recipient's business stays out, as in the parquet format: the metadata's
configuration carries only ``delta.enableChangeDataFeed`` (the tier's properties hold
waterline's state), and an ``add`` carries ``numRecords`` as its only statistic.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from waterline.sharing import protocol as P

DELTA, PARQUET = "delta", "parquet"
_CHANGE_FEED = "delta.enableChangeDataFeed"


def response_format(capabilities: str | None) -> str:
    """``delta`` when the request's ``delta-sharing-capabilities`` asks for the Delta format
    only (``responseformat=delta[;readerfeatures=...]``), else ``parquet``."""
    formats: set[str] = set()
    for part in (capabilities or "").split(";"):
        key, _, value = part.partition("=")
        if key.strip().lower() == "responseformat":
            formats |= {v.strip().lower() for v in value.split(",") if v.strip()}
    return DELTA if formats == {DELTA} else PARQUET


def protocol_line(table) -> str:
    """The table's protocol as a Delta ``protocol`` action."""
    p = table.protocol()
    delta: dict[str, Any] = {"minReaderVersion": p.min_reader_version, "minWriterVersion": p.min_writer_version}
    if p.reader_features:
        delta["readerFeatures"] = list(p.reader_features)
    if p.writer_features:
        delta["writerFeatures"] = list(p.writer_features)
    return P.line({"protocol": {"deltaProtocol": delta}})


def metadata_line(table, *, change_feed: bool, version: int | None = None) -> str:
    """The table's metadata as a Delta ``metaData`` action (``version``: of a change query's
    or a time travel's answer)."""
    meta = table.metadata()
    delta = {
        "id": meta.id, "format": {"provider": "parquet", "options": {}}, "schemaString": table.schema().to_json(),
        "partitionColumns": list(meta.partition_columns),
        "configuration": {_CHANGE_FEED: "true" if change_feed else "false"},
        "createdTime": meta.created_time,
    }
    out: dict[str, Any] = {"deltaMetadata": delta}
    if version is not None:
        out["version"] = version
    return P.line({"metaData": out})


def file_line(kind: str, action: Mapping[str, Any], *, url: str, path: str, expires: int,
              version: int | None = None, timestamp: int | None = None) -> str:
    """One file as the Delta action ``kind`` (``add``, ``remove``, ``cdc``) naming ``url``; its
    ``id`` is the SHA-256 of the path in the table's log, as the reference server's Delta format
    has it (the parquet format's is the MD5)."""
    out: dict[str, Any] = {"id": hashlib.sha256(path.encode("utf-8")).hexdigest(),
                           "deltaSingleAction": {kind: {**action, "path": url}}, "expirationTimestamp": expires}
    if version is not None:
        out["version"] = version
    if timestamp is not None:
        out["timestamp"] = timestamp
    return P.line({"file": out})


def add_action(add: Mapping[str, Any], partition_columns: list[str]) -> dict[str, Any]:
    """An ``add`` from a row of deltalake's flattened add actions (its statistics: the count only)."""
    action: dict[str, Any] = {
        "partitionValues": {c: add.get(f"partition.{c}") for c in partition_columns},
        "size": int(add["size_bytes"]), "modificationTime": int(add["modification_time"]), "dataChange": True,
    }
    if add.get("num_records") is not None:
        action["stats"] = json.dumps({"numRecords": int(add["num_records"])})
    return action


def log_action(kind: str, action: Mapping[str, Any], partition_columns: list[str], size: int) -> dict[str, Any]:
    """An ``add``, ``remove`` or ``cdc`` from a commit, for a change query: the fields a reader
    needs (no tags, no statistics beyond the count, no deletion vector)."""
    out: dict[str, Any] = {
        "partitionValues": {c: (action.get("partitionValues") or {}).get(c) for c in partition_columns},
        "size": size, "dataChange": bool(action.get("dataChange", kind != "cdc")),
    }
    if kind == "add":
        out["modificationTime"] = int(action.get("modificationTime") or 0)
        count = _num_records(action.get("stats"))
        if count is not None:
            out["stats"] = json.dumps({"numRecords": count})
    elif kind == "remove" and action.get("deletionTimestamp") is not None:
        out["deletionTimestamp"] = int(action["deletionTimestamp"])
    return out


def _num_records(stats: str | None) -> int | None:
    try:
        value = json.loads(stats)["numRecords"] if stats else None
    except (ValueError, KeyError, TypeError):
        return None
    return None if value is None else int(value)
