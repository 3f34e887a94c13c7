"""The conflict policy: may a commit go after one another writer made first? Pure.

A waterline commit is computed from one version of a table. When another
writer makes the next version first, Delta's own writers do not give up: they
check what the winner did, and commit after it when it cannot have changed
what theirs was computed from (a blind append after anything that kept the
rows; a rewrite after commits that touched none of its files). `rebase` is
that check for waterline's commits:

* kept: commits that change no row: OPTIMIZE (adds and removes with
  ``dataChange`` false, none of the files this commit removes), property
  changes (``metaData`` with the same schema and partition columns, no feature
  this writer cannot honour), VACUUM's START/END markers (``commitInfo``
  alone). A commit of ours that carries ``metaData`` takes the winner's
  properties and adds its own state to them, so a user's property is never
  reverted.
* a conflict (the commit is not written and the caller plans again): a row
  change (any ``dataChange`` add or remove, any ``cdc``), a removal of a file
  this commit removes too, another waterline commit (a waterline state, or one
  of waterline's transaction ids), a protocol change, a schema or partitioning
  change, or an action kind this module does not know.
"""

from __future__ import annotations

import json
from typing import Iterable
from urllib.parse import unquote

from waterline.engine.core.races import SkippedCommit
from waterline.engine.delta.actions import (
    Action, AddFile, CdcFile, CommitInfo, Metadata, OtherAction, Protocol, RemoveFile, Txn,
)
from waterline.engine.delta.gate import unsupported
from waterline.engine.delta.table_log import APP_COMMIT, APP_SEQ, PROPERTY, parse_state


class CommitConflict(SkippedCommit):
    """Another writer's commit changed what this commit was computed from: plan again."""


def rebase(winner: Iterable[Action], *, metadata: Metadata, protocol: Protocol, removes: Iterable[str],
           version: int, reads_nothing: bool = False) -> Metadata:
    """The metadata a commit (computed on ``metadata``, removing the files ``removes``) carries
    when written after the winning commit ``version`` (its actions ``winner``); raises
    `CommitConflict` when it may not be written after it.

    ``reads_nothing``: the commit is a blind append computed from no row of the table (an
    event log's batch), so no row change can invalidate it, as Delta lets concurrent blind
    appends go in any order; only the table's schema, partitioning or protocol can."""
    ours = {_plain(p) for p in removes}
    new = metadata
    for action in winner:
        if reads_nothing and isinstance(action, CommitInfo | Txn | AddFile | RemoveFile | CdcFile):
            continue
        reason = _conflict(action, ours, metadata)
        if reason is not None:
            raise CommitConflict(f"version {version} by another writer: {reason}")
        if isinstance(action, Metadata):
            new = action
    if new is not metadata:
        reason = unsupported(protocol, new)
        if reason is not None:
            raise CommitConflict(f"version {version} by another writer: now {reason}")
    return new


def _conflict(action: Action, ours: set[str], metadata: Metadata) -> str | None:
    if isinstance(action, CommitInfo):
        if parse_state(action.user_metadata) is not None:
            return f"a waterline commit ({action.operation})"
        return None
    if isinstance(action, Txn):
        return f"transaction {action.app_id}" if action.app_id in (APP_SEQ, APP_COMMIT) else None
    if isinstance(action, AddFile):
        return "rows added" if action.data_change else None
    if isinstance(action, RemoveFile):
        if action.data_change:
            return "rows removed"
        return f"file {action.path} removed, which this commit rewrites" if _plain(action.path) in ours else None
    if isinstance(action, CdcFile):
        return "rows changed"
    if isinstance(action, Protocol):
        return "protocol changed"
    if isinstance(action, Metadata):
        if _fields(action.schema_string) != _fields(metadata.schema_string):
            return "schema changed"
        if tuple(action.partition_columns) != tuple(metadata.partition_columns):
            return "partition columns changed"
        if action.configuration.get(PROPERTY) != metadata.configuration.get(PROPERTY):
            return "waterline state changed"
        return None
    if isinstance(action, OtherAction):
        return f"a {action.kind} action"
    return f"an unknown action {type(action).__name__}"


def same_schema(a: str, b: str) -> bool:
    """Whether two Delta schema strings describe the same schema (whoever serialised them)."""
    return _fields(a) == _fields(b)


def _fields(schema_string: str) -> object:
    """A schema as comparable data: writers serialise the same schema differently (key
    order, empty field metadata), so the text is not compared."""
    def strip(node: object) -> object:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if not (k == "metadata" and not v)}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(json.loads(schema_string))


def _plain(path: str) -> str:
    return unquote(unquote(path))
