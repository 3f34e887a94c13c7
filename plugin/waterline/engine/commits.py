"""Waterline state carried in Delta commits (``commitInfo.userMetadata``).

Every commit waterline makes to a held or tier table carries the table's full
waterline state as JSON, so the state and the data it describes land in one
atomic Delta commit: a tier's W_T can never disagree with its rows. Reading
uses the ``deltalake`` package (no JVM), so the Dagster sensor and ``status``
can read it without starting Spark.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from waterline.engine.storage import delta_table, is_delta_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_CONF = "spark.databricks.delta.commitInfo.userMetadata"
_TAG = "waterline"
_HISTORY_DEPTH = 50


def table_exists(path: str) -> bool:
    return is_delta_table(path)


def latest_state(path: str) -> dict[str, Any] | None:
    """The waterline state of the newest waterline commit of the table, or None.

    Commits by others (OPTIMIZE, VACUUM, ...) carry no state and are skipped.
    """
    if not is_delta_table(path):
        return None
    for commit in delta_table(path).history(_HISTORY_DEPTH):
        state = parse_state(commit.get("userMetadata"))
        if state is not None:
            return state
    return None


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
    with commit_state(spark, state):
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


def commit_state(spark: "SparkSession", state: Mapping[str, Any]):
    """Attach ``state`` to every Delta commit made inside the block (a context manager)."""
    return temporary_conf(spark, _CONF, json.dumps({_TAG: dict(state)}, sort_keys=True, separators=(",", ":")))
