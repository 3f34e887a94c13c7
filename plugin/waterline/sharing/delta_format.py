"""``responseformat=delta``: the same answers as Delta log actions, for kernel-based readers.

A client that asks for the Delta format (the official client's ``use_delta_format=True``,
readers built on delta-kernel) gets the table's protocol and metadata as Delta actions
(``deltaProtocol``, ``deltaMetadata``) and each file as the Delta action naming it
(``deltaSingleAction``: an ``add``, ``remove`` or ``cdc`` whose ``path`` is the signed URL), and
rebuilds a log from them. A client that accepts both formats gets parquet: every tier is
readable that way, and it is what every client reads.

What is not the recipient's business stays out, as in the parquet format: the metadata's
configuration carries only ``delta.enableChangeDataFeed`` (the tier's properties hold
waterline's state), and an ``add`` carries ``numRecords`` as its only statistic. Every line
is rendered from the Delta room's typed actions (`waterline.engine.delta.actions`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from waterline.engine.delta.actions import AddFile, CdcFile, FileAction, Metadata, Protocol, RemoveFile
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


#: The Delta action each typed file action is.
KIND = {AddFile: "add", RemoveFile: "remove", CdcFile: "cdc"}


def protocol_line(protocol: Protocol) -> str:
    """The table's protocol as a Delta ``protocol`` action."""
    delta: dict[str, Any] = {"minReaderVersion": protocol.min_reader_version,
                             "minWriterVersion": protocol.min_writer_version}
    if protocol.reader_features:
        delta["readerFeatures"] = sorted(protocol.reader_features)
    if protocol.writer_features:
        delta["writerFeatures"] = sorted(protocol.writer_features)
    return P.line({"protocol": {"deltaProtocol": delta}})


def metadata_line(meta: Metadata, *, change_feed: bool, version: int | None = None) -> str:
    """The table's metadata as a Delta ``metaData`` action (``version``: of a change query's
    or a time travel's answer)."""
    delta = {
        "id": meta.id, "format": {"provider": "parquet", "options": {}}, "schemaString": meta.schema_string,
        "partitionColumns": list(meta.partition_columns),
        "configuration": {_CHANGE_FEED: "true" if change_feed else "false"},
        "createdTime": meta.created_time,
    }
    out: dict[str, Any] = {"deltaMetadata": delta}
    if version is not None:
        out["version"] = version
    return P.line({"metaData": out})


def file_line(action: FileAction, body: dict[str, Any], *, url: str, expires: int,
              version: int | None = None, timestamp: int | None = None) -> str:
    """One file as its Delta action (``body``: what `add_action` or `log_action` keeps of it)
    naming ``url``; its ``id`` is the SHA-256 of the path in the table's log, as the reference
    server's Delta format has it (the parquet format's is the MD5)."""
    out: dict[str, Any] = {"id": hashlib.sha256(action.path.encode("utf-8")).hexdigest(),
                           "deltaSingleAction": {KIND[type(action)]: {**body, "path": url}},
                           "expirationTimestamp": expires}
    if version is not None:
        out["version"] = version
    if timestamp is not None:
        out["timestamp"] = timestamp
    return P.line({"file": out})


def partition_values(action: FileAction, partition_columns: list[str]) -> dict[str, str | None]:
    """The action's partition values, one per partition column (None where it has none)."""
    return {c: action.partition_values.get(c) for c in partition_columns}


def add_action(add: AddFile, partition_columns: list[str]) -> dict[str, Any]:
    """A snapshot's ``add`` (its statistics: the count only)."""
    action: dict[str, Any] = {
        "partitionValues": partition_values(add, partition_columns),
        "size": add.size, "modificationTime": add.modification_time, "dataChange": True,
    }
    if add.num_records is not None:
        action["stats"] = json.dumps({"numRecords": add.num_records})
    return action


def log_action(action: FileAction, partition_columns: list[str], size: int) -> dict[str, Any]:
    """An ``add``, ``remove`` or ``cdc`` from a commit, for a change query: the fields a reader
    needs (no tags, no statistics beyond the count, no deletion vector)."""
    out: dict[str, Any] = {"partitionValues": partition_values(action, partition_columns),
                           "size": size, "dataChange": action.data_change}
    if isinstance(action, AddFile):
        out["modificationTime"] = action.modification_time
        if action.num_records is not None:
            out["stats"] = json.dumps({"numRecords": action.num_records})
    elif isinstance(action, RemoveFile) and action.deletion_timestamp is not None:
        out["deletionTimestamp"] = int(action.deletion_timestamp)
    return out
