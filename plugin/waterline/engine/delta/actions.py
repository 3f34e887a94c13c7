"""Delta log actions as typed, frozen values: what one line of a commit file says.

`commit` writes them and `rebase` reads the ones other writers committed; both
go through `to_json` / `parse_commit`, so the shapes of the Delta protocol's
``add``, ``remove``, ``cdc``, ``txn``, ``metaData``, ``protocol`` and
``commitInfo`` actions are written down once. An action kind this module does
not know (``domainMetadata``, ``sidecar`` ...) is kept as `OtherAction`, which a
writer must treat as something it cannot reason about.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

Json = dict[str, Any]


@dataclass(frozen=True)
class AddFile:
    """A data file the commit makes part of the table (``dataChange`` False: same rows, new layout)."""

    path: str
    partition_values: Mapping[str, str | None]
    size: int
    modification_time: int
    data_change: bool = True
    stats: str | None = None
    tags: Mapping[str, str] | None = None
    #: The deletion vector descriptor as the log has it (``storageType``, ``pathOrInlineDv`` ...).
    deletion_vector: Mapping[str, Any] | None = None

    @property
    def num_records(self) -> int | None:
        """The file's row count from its statistics (None without them)."""
        return num_records(self.stats)

    def to_json(self) -> Json:
        body: Json = {"path": self.path, "partitionValues": dict(self.partition_values), "size": self.size,
                      "modificationTime": self.modification_time, "dataChange": self.data_change}
        if self.stats is not None:
            body["stats"] = self.stats
        _optional(body, tags=self.tags, deletionVector=self.deletion_vector)
        return {"add": body}


@dataclass(frozen=True)
class RemoveFile:
    """A data file the commit takes out of the table (its bytes stay for time travel until VACUUM)."""

    path: str
    partition_values: Mapping[str, str | None] = field(default_factory=dict)
    size: int | None = None
    deletion_timestamp: int | None = None
    data_change: bool = True
    stats: str | None = None
    tags: Mapping[str, str] | None = None
    deletion_vector: Mapping[str, Any] | None = None

    def to_json(self) -> Json:
        body: Json = {"path": self.path, "dataChange": self.data_change}
        if self.deletion_timestamp is not None:
            body["deletionTimestamp"] = self.deletion_timestamp
        body.update({"extendedFileMetadata": True, "partitionValues": dict(self.partition_values)})
        if self.size is not None:
            body["size"] = self.size
        _optional(body, stats=self.stats, tags=self.tags, deletionVector=self.deletion_vector)
        return {"remove": body}


@dataclass(frozen=True)
class CdcFile:
    """A change-data file (rows with ``_change_type``) of the commit's row changes."""

    path: str
    partition_values: Mapping[str, str | None]
    size: int
    data_change: bool = False  # the protocol's rule for cdc files; kept as read
    tags: Mapping[str, str] | None = None

    def to_json(self) -> Json:
        body: Json = {"path": self.path, "partitionValues": dict(self.partition_values), "size": self.size,
                      "dataChange": self.data_change}
        _optional(body, tags=self.tags)
        return {"cdc": body}


FileAction = AddFile | RemoveFile | CdcFile  # the actions that name a data file


def num_records(stats: str | None) -> int | None:
    """``numRecords`` of a file's statistics JSON (None without it, or when it does not parse)."""
    try:
        value = json.loads(stats)["numRecords"] if stats else None
    except (ValueError, KeyError, TypeError):
        return None
    return None if value is None else int(value)


def _optional(body: Json, **fields: Any) -> None:
    """The fields of an action that the log carries only when they have a value."""
    body.update({k: v if not isinstance(v, Mapping) else dict(v) for k, v in fields.items() if v is not None})


@dataclass(frozen=True)
class Txn:
    """An application transaction: ``app_id`` reached ``version`` (Delta keeps the newest across log cleanup)."""

    app_id: str
    version: int
    last_updated: int | None = None

    def to_json(self) -> Json:
        body: Json = {"appId": self.app_id, "version": self.version}
        if self.last_updated is not None:
            body["lastUpdated"] = self.last_updated
        return {"txn": body}


@dataclass(frozen=True)
class Metadata:
    """The table's metadata: schema, partition columns, configuration (table properties)."""

    id: str
    schema_string: str
    partition_columns: tuple[str, ...] = ()
    configuration: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None
    description: str | None = None
    created_time: int | None = None

    def with_property(self, key: str, value: str) -> Metadata:
        return replace(self, configuration={**self.configuration, key: value})

    def to_json(self) -> Json:
        return {"metaData": {
            "id": self.id, "name": self.name, "description": self.description,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": self.schema_string, "partitionColumns": list(self.partition_columns),
            "configuration": dict(self.configuration), "createdTime": self.created_time,
        }}


@dataclass(frozen=True)
class Protocol:
    """The reader and writer versions and features a table demands."""

    min_reader_version: int
    min_writer_version: int
    reader_features: frozenset[str] | None = None
    writer_features: frozenset[str] | None = None

    def to_json(self) -> Json:
        body: Json = {"minReaderVersion": self.min_reader_version, "minWriterVersion": self.min_writer_version}
        if self.reader_features is not None:
            body["readerFeatures"] = sorted(self.reader_features)
        if self.writer_features is not None:
            body["writerFeatures"] = sorted(self.writer_features)
        return {"protocol": body}


@dataclass(frozen=True)
class CommitInfo:
    """Provenance: who committed what, when, from which read version (``txn_id``: the attempt's own id)."""

    timestamp: int
    operation: str
    operation_parameters: Mapping[str, str] = field(default_factory=dict)
    read_version: int | None = None
    is_blind_append: bool = False
    operation_metrics: Mapping[str, str] = field(default_factory=dict)
    user_metadata: str | None = None
    engine_info: str | None = None
    txn_id: str | None = None

    def to_json(self) -> Json:
        body: Json = {"timestamp": self.timestamp, "operation": self.operation,
                      "operationParameters": dict(self.operation_parameters)}
        if self.read_version is not None:
            body["readVersion"] = self.read_version
        body.update({"isolationLevel": "Serializable", "isBlindAppend": self.is_blind_append,
                     "operationMetrics": dict(self.operation_metrics)})
        if self.user_metadata is not None:
            body["userMetadata"] = self.user_metadata
        if self.engine_info is not None:
            body["engineInfo"] = self.engine_info
        if self.txn_id is not None:
            body["txnId"] = self.txn_id
        return {"commitInfo": body}


@dataclass(frozen=True)
class OtherAction:
    """An action kind this module does not model; kept whole."""

    kind: str
    body: Any

    def to_json(self) -> Json:
        return {self.kind: self.body}


Action = AddFile | RemoveFile | CdcFile | Txn | Metadata | Protocol | CommitInfo | OtherAction


def encode_commit(actions: list[Action]) -> bytes:
    """A commit file's bytes: one JSON action per line, in UTF-8 as Spark writes them."""
    return "\n".join(_line(a.to_json()) for a in actions).encode()


def _line(action: Json) -> str:
    """One action as JSON with its characters as they are, not ``\\u`` escapes: delta-kernel's
    readers (deltalake, polars, DuckDB) read the escaped pair of U+10FFFF in a statistic
    wrongly and skip the file (a string bound ends with that character). A text that cannot
    be UTF-8 (a lone surrogate) keeps the escapes."""
    text = json.dumps(action, separators=(",", ":"), ensure_ascii=False)
    try:
        text.encode()
    except UnicodeEncodeError:
        return json.dumps(action, separators=(",", ":"))
    return text


def parse_commit(body: bytes) -> list[Action]:
    """The actions of a commit file (any writer's)."""
    out: list[Action] = []
    for line in body.decode().splitlines():
        if line.strip():
            out.append(parse_action(json.loads(line)))
    return out


def parse_action(raw: Json) -> Action:
    """One action from its JSON object (``{"add": {...}}``)."""
    kind, body = next(iter(raw.items()))
    if kind == "add":
        return AddFile(path=body["path"], partition_values=body.get("partitionValues") or {},
                       size=int(body.get("size", 0)), modification_time=int(body.get("modificationTime", 0)),
                       data_change=bool(body.get("dataChange", True)), stats=body.get("stats"),
                       tags=body.get("tags"), deletion_vector=body.get("deletionVector"))
    if kind == "remove":
        return RemoveFile(path=body["path"], partition_values=body.get("partitionValues") or {},
                          size=body.get("size"), deletion_timestamp=body.get("deletionTimestamp"),
                          data_change=bool(body.get("dataChange", True)), stats=body.get("stats"),
                          tags=body.get("tags"), deletion_vector=body.get("deletionVector"))
    if kind == "cdc":
        return CdcFile(path=body["path"], partition_values=body.get("partitionValues") or {},
                       size=int(body.get("size", 0)), data_change=bool(body.get("dataChange", False)),
                       tags=body.get("tags"))
    if kind == "txn":
        return Txn(app_id=body["appId"], version=int(body["version"]), last_updated=body.get("lastUpdated"))
    if kind == "metaData":
        return Metadata(id=body["id"], schema_string=body["schemaString"],
                        partition_columns=tuple(body.get("partitionColumns") or ()),
                        configuration=body.get("configuration") or {}, name=body.get("name"),
                        description=body.get("description"), created_time=body.get("createdTime"))
    if kind == "protocol":
        features = body.get("readerFeatures"), body.get("writerFeatures")
        return Protocol(min_reader_version=int(body["minReaderVersion"]),
                        min_writer_version=int(body["minWriterVersion"]),
                        reader_features=None if features[0] is None else frozenset(features[0]),
                        writer_features=None if features[1] is None else frozenset(features[1]))
    if kind == "commitInfo":
        return CommitInfo(timestamp=int(body.get("timestamp", 0)), operation=str(body.get("operation", "")),
                          operation_parameters=body.get("operationParameters") or {},
                          read_version=body.get("readVersion"), is_blind_append=bool(body.get("isBlindAppend")),
                          operation_metrics=body.get("operationMetrics") or {},
                          user_metadata=body.get("userMetadata"), engine_info=body.get("engineInfo"),
                          txn_id=body.get("txnId"))
    return OtherAction(kind, body)
