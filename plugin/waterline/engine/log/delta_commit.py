"""One Delta commit from prepared file actions, written without a JVM (releases and held appends).

A release must land as exactly one commit per tier carrying the data files,
the change-data files, the Delta transaction id and the state (as
``commitInfo.userMetadata`` and as the table property that survives log
cleanup). Spark's MERGE cannot change a table property in its commit, and
`deltalake`'s write transaction (1.6) takes add and remove actions only (no
``cdc``, no ``metaData``), so neither can make that one commit; see
docs/decisions.md "Pre-staged releases". A held append is committed here too:
Spark's append with a transaction id first computes the table's whole state
(three Spark jobs per ingest) to look the id up, which `TableLog` reads from
the log without a JVM (docs/decisions.md "Held appends").

The commit file is written following the Delta protocol's rules for writers,
and only to tables whose protocol this writer fully honours (`unsupported`);
any other table takes the Spark path. Atomicity is the protocol's own:
``_delta_log/<version>.json`` is created only if absent, so of two writers of
one version exactly one wins.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from waterline.engine.core.races import SkippedCommit
from waterline.engine.core.state import HeldState, TierState
from waterline.engine.log import storage
from waterline.engine.log.objects import create_if_absent
from waterline.engine.log.storage import delta_table
from waterline.engine.log.table_log import PROPERTY, TAG, TableLog

logger = logging.getLogger(__name__)

#: Writer features whose obligations this writer meets: change data (it writes ``cdc``
#: files), and features it only has to leave alone while they constrain nothing here
#: (`unsupported` refuses tables where they do: append-only, invariants, constraints,
#: generated columns).
WRITER_FEATURES = frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed",
                             "generatedColumns", "timestampNtz"})
READER_FEATURES = frozenset({"timestampNtz"})
_FIELD_METADATA_REFUSED = ("delta.invariants", "delta.generationExpression", "delta.identity")
ENGINE_INFO = "waterline-prestaged"  # a release's commit (the latency bench finds them by it)
_APPEND_ENGINE_INFO = "waterline"
OPERATION = "WATERLINE RELEASE"
_CHECKPOINT_INTERVAL = "delta.checkpointInterval"
_LOG_CLEANUP = "delta.enableExpiredLogCleanup"


def state_text(state: Any, *, tagged: bool = False) -> str:
    """A state's JSON text: alone (the table property) or under ``waterline`` (userMetadata)."""
    body = state.to_json()
    return json.dumps({TAG: body} if tagged else body, sort_keys=True, separators=(",", ":"))


def unsupported(log: TableLog) -> str | None:
    """Why this writer must not commit to the table (the Spark path must), or None."""
    if log.table is None:
        return "no table"
    protocol = log.table.protocol()
    reader = set(protocol.reader_features or [])
    if protocol.min_reader_version > 1 and (protocol.min_reader_version != 3 or reader - READER_FEATURES):
        return f"reader protocol {protocol.min_reader_version} {sorted(reader - READER_FEATURES)}"
    if protocol.min_writer_version == 7:
        extra = set(protocol.writer_features or []) - WRITER_FEATURES
        if extra:
            return f"writer features {sorted(extra)}"
    elif protocol.min_writer_version > 4:  # 5: column mapping, 6: identity columns
        return f"writer protocol {protocol.min_writer_version}"
    config = log.table.metadata().configuration
    if config.get("delta.appendOnly", "").lower() == "true":
        return "delta.appendOnly"
    if any(k.startswith("delta.constraints.") for k in config):
        return "CHECK constraints"
    if config.get("delta.columnMapping.mode", "none") != "none":
        return "column mapping"
    schema = log.schema_json() or ""
    for key in _FIELD_METADATA_REFUSED:
        if f'"{key}"' in schema:
            return key
    return None


@dataclass(frozen=True)
class FileActions:
    """The file side of one commit: Delta ``add``, ``remove`` and ``cdc`` actions (JSON-ready)."""

    adds: tuple[dict, ...] = ()
    removes: tuple[dict, ...] = ()
    cdcs: tuple[dict, ...] = ()
    metrics: dict[str, str] = field(default_factory=dict)  # commitInfo.operationMetrics

    @property
    def empty(self) -> bool:
        return not (self.adds or self.removes or self.cdcs)


def commit_path(table: str, version: int) -> str:
    return storage.join(table, "_delta_log", f"{version:020d}.json")


def commit_tier(log: TableLog, files: FileActions, state: TierState, *, app: str) -> int | None:
    """Write version ``log.version + 1`` of the tier: ``files``, the transaction (``app``,
    ``state.n``), the state in the commit and in the table property. The version written,
    or None when another writer made that version first (nothing was written then).

    ``log`` is the snapshot the files were computed on; the caller has checked, under the
    feed lease, that it is still the newest.
    """
    return _commit(log, files, state, operation=OPERATION, engine=ENGINE_INFO,
                   parameters={"w": str(state.w), "seq": str(state.seq)}, txn=(app, state.n), record_property=True)


def commit_append(log: TableLog, files: FileActions, state: HeldState, *, app: str,
                  record_property: bool) -> int | None:
    """Write version ``log.version + 1`` of the held table: an append of ``files`` (adds
    only) carrying the transaction (``app``, ``state.seq``) and the state, and, when
    ``record_property``, the state as the table property too. As `commit_tier`: the
    version, or None when another writer made it first."""
    assert not (files.removes or files.cdcs), "an append adds files only"
    partition_by = json.dumps(list(log.table.metadata().partition_columns) if log.table else [])
    return _commit(log, files, state, operation="WRITE", engine=_APPEND_ENGINE_INFO,
                   parameters={"mode": "Append", "partitionBy": partition_by},
                   txn=(app, state.seq), record_property=record_property, blind_append=True)


def commit_property(log: TableLog, state: HeldState | TierState) -> int | None:
    """Write version ``log.version + 1``: the state as the table property and in the commit,
    and nothing else (what Spark's ``ALTER TABLE ... SET TBLPROPERTIES`` commits)."""
    return _commit(log, FileActions(), state, operation="SET TBLPROPERTIES", engine=_APPEND_ENGINE_INFO,
                   parameters={"properties": json.dumps({PROPERTY: state_text(state)})}, txn=None,
                   record_property=True)


def _commit(log: TableLog, files: FileActions, state: HeldState | TierState, *, operation: str, engine: str,
            parameters: Mapping[str, str], txn: tuple[str, int] | None, record_property: bool,
            blind_append: bool = False) -> int | None:
    """The commit file of version ``log.version + 1``, created only if absent.

    Raises `SkippedCommit` when the table already has transaction ``txn`` at its version
    or later: what Delta's own writers do for a replay (the step was applied, or a newer
    writer used its number)."""
    assert log.table is not None and log.version is not None
    if txn is not None:
        applied = log.transaction_version(txn[0])
        if applied is not None and applied >= txn[1]:
            raise SkippedCommit(f"{log.path}: transaction {txn[0]} {txn[1]} already applied (table has {applied})")
    now_ms = int(time.time() * 1000)
    actions: list[dict] = [
        {"commitInfo": {
            "timestamp": now_ms, "operation": operation, "operationParameters": dict(parameters),
            "readVersion": log.version, "isolationLevel": "Serializable", "isBlindAppend": blind_append,
            "operationMetrics": files.metrics, "userMetadata": state_text(state, tagged=True),
            "engineInfo": engine,
        }},
    ]
    if txn is not None:
        actions.append({"txn": {"appId": txn[0], "version": txn[1], "lastUpdated": now_ms}})
    if record_property:
        metadata = log.table.metadata()
        configuration = dict(metadata.configuration)
        configuration[PROPERTY] = state_text(state)
        actions.append({"metaData": {
            "id": metadata.id, "name": metadata.name, "description": metadata.description,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": log.schema_json(), "partitionColumns": list(metadata.partition_columns),
            "configuration": configuration, "createdTime": metadata.created_time,
        }})
    actions += [{"remove": {**r, "deletionTimestamp": now_ms}} for r in files.removes]
    actions += [{"add": a} for a in files.adds]
    actions += [{"cdc": c} for c in files.cdcs]
    body = "\n".join(json.dumps(a, separators=(",", ":")) for a in actions).encode()
    version = log.version + 1
    return version if create_if_absent(commit_path(log.path, version), body) else None


def checkpoint_if_due(log: TableLog, version: int) -> None:
    """A Delta checkpoint of ``version`` at the table's interval (read from ``log``, the snapshot
    the commit was made on), and then the cleanup of log files past the table's retention,
    as Spark does after its own commits: without them, a run of these commits would leave
    readers an ever longer log to replay and the log folder would only grow. Callers make
    it after their commits, not between them (it is not needed to read them)."""
    try:
        configuration = log.table.metadata().configuration
        interval = int(configuration.get(_CHECKPOINT_INTERVAL, "10"))
        if interval <= 0 or version % interval:
            return
        table = delta_table(log.path)
        if table.version() == version:
            table.create_checkpoint()
            if configuration.get(_LOG_CLEANUP, "true").lower() != "false":
                table.cleanup_metadata()  # keeps delta.logRetentionDuration (30 days by default)
    except Exception as exc:  # noqa: BLE001  (a checkpoint only speeds reads up; the commit stands)
        logger.warning("table %s: no checkpoint at version %s: %s", log.path, version, exc)
