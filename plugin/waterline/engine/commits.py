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

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_CONF = "spark.databricks.delta.commitInfo.userMetadata"
_TAG = "waterline"
_HISTORY_DEPTH = 50


def table_exists(path: str) -> bool:
    from deltalake import DeltaTable

    return DeltaTable.is_deltatable(path)


def latest_state(path: str) -> dict[str, Any] | None:
    """The waterline state of the newest waterline commit of the table, or None.

    Commits by others (OPTIMIZE, VACUUM, ...) carry no state and are skipped.
    """
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(path):
        return None
    for commit in DeltaTable(path).history(_HISTORY_DEPTH):
        state = _parse(commit.get("userMetadata"))
        if state is not None:
            return state
    return None


def states_since(path: str, *, key: str, after: int) -> list[dict[str, Any]]:
    """Waterline states of the newest commits whose ``state[key] > after``, newest first."""
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(path):
        return []
    table = DeltaTable(path)
    depth = _HISTORY_DEPTH
    while True:
        commits = table.history(depth)
        found = []
        for commit in commits:
            state = _parse(commit.get("userMetadata"))
            if state is None:
                continue
            if state.get(key, 0) <= after:
                return found
            found.append(state)
        if len(commits) < depth:
            return found
        depth *= 10  # a long run of ingests since the last release: look further back


def _parse(raw: str | None) -> dict[str, Any] | None:
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
def commit_state(spark: "SparkSession", state: Mapping[str, Any]) -> Iterator[None]:
    """Attach ``state`` to every Delta commit made inside the block."""
    previous = spark.conf.get(_CONF, None)
    spark.conf.set(_CONF, json.dumps({_TAG: dict(state)}, sort_keys=True, separators=(",", ":")))
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(_CONF)
        else:
            spark.conf.set(_CONF, previous)
