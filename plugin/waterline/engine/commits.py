"""Waterline state carried in Delta commits, and what survives log cleanup.

Every commit waterline makes to a held or tier table carries the table's full
waterline state as JSON (``commitInfo.userMetadata``), so the state and the data
it describes land in one atomic Delta commit: a tier's W_T can never disagree
with its rows. Each state has a per-table commit number ``n``, and every Spark
write also carries a Delta transaction id (``txn``: app id -> version), which
Delta keeps in checkpoints, so it survives log cleanup:

* ``waterline.seq`` on the held table: the ingest sequence of the last append;
* ``waterline.commit`` on every table: the ``n`` of the last waterline data commit.

A replayed commit (same app id, version not above the table's) is skipped by
Delta, so no commit applies twice. The state itself also goes into the table
property ``waterline.state`` (metadata, kept in checkpoints) whenever the commit
history alone could lose it: always for tiers, for the held table when its
event-time bookkeeping moves. Readers take the newest of the property and the
retained history, check it against the transaction versions, and fail, naming
the table, rather than guess. Reading uses the ``deltalake`` package (no JVM),
so the Dagster sensor and ``status`` can read it without starting Spark.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from waterline.engine.storage import delta_table, is_delta_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_CONF = "spark.databricks.delta.commitInfo.userMetadata"
_TXN_APP = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"
_TAG = "waterline"
_HISTORY_DEPTH = 50
PROPERTY = "waterline.state"
APP_SEQ = "waterline.seq"  # held appends: txnVersion = the new ingest sequence
APP_COMMIT = "waterline.commit"  # other waterline data commits: txnVersion = the state's n


class SkippedCommit(Exception):
    """A waterline commit did not land: Delta skipped it as already applied (a newer
    writer used its transaction version) or a concurrent commit won. The writer must
    re-read the state and recompute, never assume its work is in."""


def is_conflict(exc: BaseException) -> bool:
    """A Delta optimistic-concurrency conflict (another commit won the race)."""
    return "Concurrent" in type(exc).__name__ + str(exc)[:300]


def table_exists(path: str) -> bool:
    return is_delta_table(path)


def latest_state(path: str) -> dict[str, Any] | None:
    """The table's current waterline state, or None if waterline never committed to it.

    The newest of the ``waterline.state`` property and the states in the retained
    commit history (commits by others carry none and are skipped), checked against
    the ``waterline.commit`` transaction version Delta keeps across log cleanup.
    Raises `WaterlineError` if a newer waterline commit is known than any state found.
    """
    if not is_delta_table(path):
        return None
    table = delta_table(path)
    prop = _json(table.metadata().configuration.get(PROPERTY))
    prop = prop if isinstance(prop, dict) else None
    committed = table.transaction_version(APP_COMMIT)
    depth = _HISTORY_DEPTH
    while True:
        commits = table.history(depth)
        found = next((s for c in commits if (s := parse_state(c.get("userMetadata"))) is not None), None)
        best = max([s for s in (found, prop) if s is not None], key=_number, default=None)
        if committed is None or (best is not None and _number(best) >= committed):
            return best
        if len(commits) < depth:  # the whole retained log read: the state is gone
            from waterline.errors import WaterlineError

            raise WaterlineError(
                f"table {path}: waterline state lost (last waterline commit n={committed}, newest state found "
                f"n={None if best is None else _number(best)}); restore the table property {PROPERTY}"
            )
        depth *= 10


def _number(state: Mapping[str, Any]) -> int:
    return int(state.get("n", -1))


def _json(raw: str | None) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def transaction_version(path: str, app: str) -> int | None:
    """The version of Delta transaction ``app`` on the table (kept across log cleanup)."""
    return delta_table(path).transaction_version(app) if is_delta_table(path) else None


def max_file_seq(path: str) -> int | None:
    """The greatest ``_wl_seq`` among the held table's files, from their statistics."""
    actions = delta_table(path).get_add_actions(flatten=True).to_pydict()
    values = [v for v in actions.get("max._wl_seq", []) if v is not None]
    return max(values) if values else None


def states_since(path: str, *, key: str, after: int) -> list[dict[str, Any]]:
    """Waterline states of the newest commits whose ``state[key] > after``, newest first."""
    if not is_delta_table(path):
        return []
    table = delta_table(path)
    depth = _HISTORY_DEPTH
    while True:
        commits = table.history(depth)
        found = []
        for commit in commits:
            state = parse_state(commit.get("userMetadata"))
            if state is None:
                continue
            if state.get(key, 0) <= after:
                return found
            found.append(state)
        if len(commits) < depth:
            return found
        depth *= 10  # a long run of ingests since the last release: look further back


# Commits that never change which rows a table holds; anything else unknown (a RESTORE,
# a DELETE by hand) ends a search for the last state of a partition.
_ROW_PRESERVING = {"OPTIMIZE", "VACUUM START", "VACUUM END", "SET TBLPROPERTIES"}


def last_ingest_state(path: str, partition: str, *, depth: int = _HISTORY_DEPTH) -> dict[str, Any] | None:
    """The state of the newest ingest commit of ``partition`` among the last ``depth``
    commits, or None if it is older, absent, or a foreign commit may have changed rows since."""
    if not is_delta_table(path):
        return None
    for commit in delta_table(path).history(depth):
        state = parse_state(commit.get("userMetadata"))
        if state is None:
            if commit.get("operation") in _ROW_PRESERVING:
                continue
            return None
        if state.get("op") == "ingest" and state.get("partition") == partition:
            return state
    return None


def table_version(path: str) -> int | None:
    return delta_table(path).version() if is_delta_table(path) else None


def record_state(spark: "SparkSession", path: str, state: Mapping[str, Any]) -> None:
    """Commit ``state`` to the table with no row change.

    Delta skips the commit of an empty append and of a MERGE that changes
    nothing, so a waterline that moved without data is recorded with a
    property change instead, which always commits. The property also keeps the
    state readable from the table's metadata after old log files are cleaned up.
    """
    from waterline.engine.sqltext import sql_string

    text = json.dumps(dict(state), sort_keys=True, separators=(",", ":"))
    with commit_state(spark, state):  # Delta records no txn for ALTER TABLE: n alone orders it
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('waterline.state' = {sql_string(text)})")


def last_commit_metrics(path: str) -> dict[str, int]:
    """The newest commit's operationMetrics (rows inserted, updated, deleted ...)."""
    metrics = delta_table(path).history(1)[0].get("operationMetrics") or {}
    return {k: int(v) for k, v in metrics.items() if str(v).lstrip("-").isdigit()}


def parse_state(raw: str | None) -> dict[str, Any] | None:
    """The waterline state in a commit's userMetadata, or None if it carries none."""
    if not raw:
        return None
    try:
        payload = json.loads(raw)
    except ValueError:
        return None
    if isinstance(payload, dict) and isinstance(payload.get(_TAG), dict):
        return payload[_TAG]
    return None


@contextmanager
def temporary_conf(spark: "SparkSession", key: str, value: str) -> Iterator[None]:
    """Set a Spark SQL conf for the block, then restore what was there."""
    previous = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)


@contextmanager
def commit_state(spark: "SparkSession", state: Mapping[str, Any], *, app: str | None = None,
                 version: int | None = None) -> Iterator[None]:
    """Attach ``state`` to the Delta commit made inside the block, and with ``app`` the
    transaction id (app, version): Delta then skips the commit if the table already has
    that app at ``version`` or later, so a replay is a no-op (see `check_committed`)."""
    text = json.dumps({_TAG: dict(state)}, sort_keys=True, separators=(",", ":"))
    with temporary_conf(spark, _CONF, text):
        if app is None:
            yield
            return
        with temporary_conf(spark, _TXN_APP, app), temporary_conf(spark, _TXN_VERSION, str(version)):
            yield


def new_token() -> str:
    """A unique id for one commit attempt, stored in its state to find the commit again."""
    import uuid

    return uuid.uuid4().hex


def check_committed(path: str, token: str, *, after: int | None) -> int:
    """The version of the commit whose state carries ``token`` (made after version
    ``after``); raises `SkippedCommit` if there is none: Delta skipped it as already
    applied, or another writer's commit replaced it."""
    table = delta_table(path)
    newest = table.version()
    depth = newest - (-1 if after is None else after)
    for commit in table.history(max(depth, 1)):
        state = parse_state(commit.get("userMetadata"))
        if state is not None and state.get("token") == token:
            return int(commit["version"])
    raise SkippedCommit(f"{path}: commit {token} did not land (versions after {after} hold none)")
