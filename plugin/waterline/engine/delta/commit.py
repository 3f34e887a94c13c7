"""waterline's one Delta commit writer: releases, held appends and state-only commits. No JVM.

A release must land as exactly one commit per tier carrying the data files,
the change-data files, the Delta transaction id and the state (as
``commitInfo.userMetadata`` and as the table property that survives log
cleanup). Spark's MERGE cannot change a table property in its commit, and
`deltalake`'s write transaction (1.6) takes add and remove actions only (no
``cdc``, no ``metaData``), so neither can make that one commit; see
docs/decisions.md "Pre-staged releases". Held appends are committed here too
(docs/decisions.md "Held appends").

Writing the log makes waterline the owner of what a Delta writer guarantees,
and `write_commit` is the one place that keeps it:

* **the feature gate**: only tables whose protocol this writer honours
  (`waterline.engine.delta.gate`); any other takes Spark's writer;
* **the fence**: ``_delta_log/<version>.json`` is created only if absent, so of
  two writers of one version exactly one wins; a transaction id the snapshot
  already has at this version or later is a replay (`SkippedCommit`);
* **idempotence**: a write answered "already there" or not answered at all is
  read back and compared with what was written
  (`waterline.engine.delta.objects.create_if_absent`): our own bytes are a
  success, never a lost race, so the caller never deletes files its own commit
  names; an answer that never comes is `OutcomeUnknown`, and nothing is deleted;
* **other writers**: a version another writer took is read, and the commit is
  written after it when that commit kept every row this one was computed from
  (`waterline.engine.delta.rebase`), as Delta's own conflict checker does;
  otherwise `CommitConflict` and the caller plans again;
* **checkpoints and log cleanup** at the table's interval: every commit it writes is
  checkpointed when its version is a multiple of ``delta.checkpointInterval``
  (`checkpoint_if_due`), right after it, or, for the commits of one operation
  (a release's tiers), after the last of them (`OwedCheckpoints`).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Mapping

from waterline.engine.core import faults
from waterline.engine.core.races import SkippedCommit
from waterline.engine.core.state import HeldState, TierState
from waterline.engine.delta.actions import (
    Action, AddFile, CdcFile, CommitInfo, Metadata, RemoveFile, Txn, encode_commit,
)
from waterline.engine.delta.gate import unsupported
from waterline.engine.delta.objects import create_if_absent
from waterline.engine.delta.rebase import CommitConflict, rebase
from waterline.engine.delta.storage import delta_table
from waterline.engine.delta.table_log import PROPERTY, TAG, Snapshot, TableLog, commit_path, read_commit
from waterline.errors import WaterlineError

logger = logging.getLogger(__name__)

ENGINE_INFO = "waterline-prestaged"  # a release's commit (the latency bench finds them by it)
APPEND_ENGINE_INFO = "waterline"
OPERATION = "WATERLINE RELEASE"
_CHECKPOINT_INTERVAL = "delta.checkpointInterval"
_LOG_CLEANUP = "delta.enableExpiredLogCleanup"
#: Versions other writers may take in a row, each kept-rows, before a commit gives up and plans again.
MAX_REBASES = 50


def state_text(state: HeldState | TierState, *, tagged: bool = False) -> str:
    """A state's JSON text: alone (the table property) or under ``waterline`` (userMetadata)."""
    body = state.to_json()
    return json.dumps({TAG: body} if tagged else body, sort_keys=True, separators=(",", ":"))


def table_unsupported(log: TableLog) -> str | None:
    """Why this writer must not commit to the table at ``log`` (Spark's writer must), or None."""
    if not log.exists:
        return "no table"
    return unsupported(log.protocol(), log.metadata())


@dataclass(frozen=True)
class FileActions:
    """The file side of one commit: its ``add``, ``remove`` and ``cdc`` actions and the
    ``commitInfo.operationMetrics`` that describe them."""

    adds: tuple[AddFile, ...] = ()
    removes: tuple[RemoveFile, ...] = ()
    cdcs: tuple[CdcFile, ...] = ()
    metrics: Mapping[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.adds or self.removes or self.cdcs)


@dataclass(frozen=True)
class Commit:
    """One waterline commit before it is written: its files, its transaction, its state.

    ``record_property``: the commit also carries ``metaData`` with the state as the table
    property ``waterline.state`` (which log cleanup keeps)."""

    operation: str
    engine: str
    state: HeldState | TierState | None  # None: an event log's append, which carries no waterline state
    files: FileActions = FileActions()
    parameters: Mapping[str, str] = field(default_factory=dict)
    txn: tuple[str, int] | None = None
    record_property: bool = False
    #: Further transactions the commit applies (a stream's (app, batch id) beside the held
    #: sequence): a replay of any of them skips the whole commit.
    also_txns: tuple[tuple[str, int], ...] = ()
    #: A new schema the commit gives the table (``metaData``): columns `apply` adds.
    schema_string: str | None = None

    @property
    def transactions(self) -> tuple[tuple[str, int], ...]:
        return ((self.txn,) if self.txn is not None else ()) + self.also_txns

    @property
    def blind_append(self) -> bool:
        """Adds only, nothing read: Delta's ``isBlindAppend`` (a commit with ``metaData`` is not)."""
        return not (self.files.removes or self.files.cdcs or self.record_property or self.schema_string)

    def actions(self, *, read_version: int, metadata: Metadata, attempt: str, now_ms: int) -> list[Action]:
        """The commit file's actions, written on top of a table whose metadata is ``metadata``."""
        out: list[Action] = [CommitInfo(
            timestamp=now_ms, operation=self.operation, operation_parameters=dict(self.parameters),
            read_version=read_version, is_blind_append=self.blind_append,
            operation_metrics=dict(self.files.metrics),
            user_metadata=None if self.state is None else state_text(self.state, tagged=True),
            engine_info=self.engine, txn_id=attempt,
        )]
        out.extend(Txn(app, version, now_ms) for app, version in self.transactions)
        if self.schema_string is not None:  # on the metadata after a rebase: others' properties kept
            metadata = replace(metadata, schema_string=self.schema_string)
        if self.record_property and self.state is not None:
            out.append(metadata.with_property(PROPERTY, state_text(self.state)))
        elif self.schema_string is not None:
            out.append(metadata)
        out += [RemoveFile(r.path, r.partition_values, r.size, now_ms, r.data_change) for r in self.files.removes]
        out += self.files.adds
        out += self.files.cdcs
        return out


def tier_commit(files: FileActions, state: TierState, *, app: str) -> Commit:
    """A release's commit of one tier: ``files``, the transaction (``app``, ``state.n``), the
    state in the commit and in the table property."""
    return Commit(operation=OPERATION, engine=ENGINE_INFO, state=state, files=files,
                  parameters={"w": str(state.w), "seq": str(state.seq)}, txn=(app, state.n), record_property=True)


def append_commit(files: FileActions, state: HeldState, *, app: str, partition_by: tuple[str, ...],
                  record_property: bool, also_txns: tuple[tuple[str, int], ...] = (),
                  parameters: Mapping[str, str] | None = None) -> Commit:
    """A held append: ``files`` (adds only), the transaction (``app``, ``state.seq``) and the
    state, and, when ``record_property``, the state as the table property too; ``also_txns``:
    further transactions it applies (a stream batch's); ``parameters``: more of the commit's
    ``operationParameters`` (a stream batch's summary)."""
    if files.removes or files.cdcs:
        raise ValueError("an append adds files only")
    return Commit(operation="WRITE", engine=APPEND_ENGINE_INFO, state=state, files=files,
                  parameters={**(parameters or {}), "mode": "Append", "partitionBy": json.dumps(list(partition_by))},
                  txn=(app, state.seq), record_property=record_property, also_txns=also_txns)


def property_commit(state: HeldState | TierState) -> Commit:
    """The state as the table property and in the commit, nothing else (what Spark's
    ``ALTER TABLE ... SET TBLPROPERTIES`` commits)."""
    return Commit(operation="SET TBLPROPERTIES", engine=APPEND_ENGINE_INFO, state=state,
                  parameters={"properties": json.dumps({PROPERTY: state_text(state)})}, record_property=True)


def event_commit(files: FileActions) -> Commit:
    """An append to an event log (`waterline.engine.delta.event_table`): ``files`` (adds only),
    no state, no transaction; it reads no row, so it goes after any other append."""
    if files.removes or files.cdcs:
        raise ValueError("an event append adds files only")
    return Commit(operation="WRITE", engine=APPEND_ENGINE_INFO, state=None, files=files,
                  parameters={"mode": "Append", "partitionBy": "[]"})


def schema_commit(schema_string: str, added: list[str]) -> Commit:
    """A new schema and nothing else (what Spark's ``ALTER TABLE ... ADD COLUMNS`` commits):
    ``added``, the columns it adds, for the commit's parameters."""
    return Commit(operation="ADD COLUMNS", engine=APPEND_ENGINE_INFO, state=None,
                  parameters={"columns": json.dumps(added)}, schema_string=schema_string)


def write_commit(base: Snapshot, commit: Commit, *, max_rebases: int = MAX_REBASES,
                 checkpoints: OwedCheckpoints | None = None) -> int:
    """Write ``commit`` as the next version after ``base`` (the snapshot it was computed on),
    or after the versions other writers made since when it may go after them. The version
    written. A checkpoint of it follows when the table's interval says so (`checkpoint_if_due`),
    or is added to ``checkpoints`` for the caller to write after its last commit.

    Raises `SkippedCommit` when the snapshot already has the commit's transaction at its
    version or later (a replay), `CommitConflict` when another writer's commit changed what
    it was computed from (nothing was written: plan again), and `OutcomeUnknown` when the
    store never answered (the commit may have landed: delete nothing it names)."""
    reason = unsupported(base.protocol, base.metadata)
    if reason is not None:
        raise WaterlineError(f"table {base.path}: waterline's commit writer does not write this table ({reason})")
    for app, txn_version in commit.transactions:
        applied = base.transactions.get(app)
        if applied is not None and applied >= txn_version:
            raise SkippedCommit(f"{base.path}: transaction {app} {txn_version} already applied (table has {applied})")
    attempt = uuid.uuid4().hex  # makes every attempt's bytes unique: a read-back that matches is ours
    metadata = base.metadata
    version = base.version + 1
    removes = [r.path for r in commit.files.removes]
    for _ in range(max_rebases + 1):
        actions = commit.actions(read_version=base.version, metadata=metadata, attempt=attempt,
                                 now_ms=int(time.time() * 1000))
        if create_if_absent(commit_path(base.path, version), encode_commit(actions)):
            if checkpoints is None:
                checkpoint_if_due(base.path, version, metadata.configuration)
            else:
                checkpoints.owe(base.path, version, metadata.configuration)
            return version
        winner = read_commit(base.path, version)
        if winner is None:
            raise CommitConflict(f"{base.path}: version {version} taken, and not readable")
        metadata = rebase(winner, metadata=metadata, protocol=base.protocol, removes=removes, version=version,
                          reads_nothing=commit.state is None and commit.blind_append)
        logger.info("table %s: version %s taken by another writer that kept every row; committing after it",
                    base.path, version)
        version += 1
    raise CommitConflict(f"{base.path}: {max_rebases} versions taken by other writers in a row")


def check_rebase(base: Snapshot, commit: Commit, *, latest: int) -> None:
    """Raise `CommitConflict` unless ``commit`` (computed on ``base``) may be written after every
    version up to ``latest`` other writers made since: the check a release makes on every tier
    before its first commit, so the common conflict costs nothing."""
    metadata = base.metadata
    removes = [r.path for r in commit.files.removes]
    for version in range(base.version + 1, latest + 1):
        winner = read_commit(base.path, version)
        if winner is None:
            raise CommitConflict(f"{base.path}: version {version} is not readable")
        metadata = rebase(winner, metadata=metadata, protocol=base.protocol, removes=removes, version=version)


class OwedCheckpoints:
    """The checkpoints owed by the commits of one operation that writes several (a release's
    tiers), written after the last of them, not between two: the commits land back to back.
    Pass it to each `write_commit`, then call `write` (not on an error: the commits stand,
    and the table's next due commit checkpoints)."""

    def __init__(self) -> None:
        self._owed: list[tuple[str, int, Mapping[str, str]]] = []

    def owe(self, path: str, version: int, configuration: Mapping[str, str]) -> None:
        self._owed.append((path, version, configuration))

    def write(self) -> None:
        """The owed checkpoints that are due, in commit order."""
        owed, self._owed = self._owed, []
        for path, version, configuration in owed:
            checkpoint_if_due(path, version, configuration)


def checkpoint_if_due(path: str, version: int, configuration: Mapping[str, str]) -> None:
    """A Delta checkpoint of ``version`` at the table's interval (``configuration``: its
    properties), and then the cleanup of log files past the table's retention, as Spark
    does after its own commits: without them, a run of these commits would leave readers
    an ever longer log to replay and the log folder would only grow. `write_commit` calls it
    for every commit it writes (or `OwedCheckpoints.write`, after an operation's last commit)."""
    try:
        interval = int(configuration.get(_CHECKPOINT_INTERVAL, "10"))
        if interval <= 0 or version % interval:
            return
        table = delta_table(path)
        if table.version() == version:
            faults.boundary(faults.CHECKPOINT_BEFORE)
            table.create_checkpoint()
            faults.boundary(faults.CHECKPOINT_AFTER)
            if configuration.get(_LOG_CLEANUP, "true").lower() != "false":
                table.cleanup_metadata()  # keeps delta.logRetentionDuration (30 days by default)
    except Exception as exc:  # noqa: BLE001  (a checkpoint only speeds reads up; the commit stands)
        logger.warning("table %s: no checkpoint at version %s: %s", path, version, exc)
