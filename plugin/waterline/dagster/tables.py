"""JVM-free facts about a feed's Delta tables (the ``deltalake`` package): row counts,
schemas, and the waterline states recorded in a table's commit history.

Nothing here imports pyspark: the release sensor and the cheap checks use it.
"""

from __future__ import annotations

from typing import Any

from waterline.engine.commits import parse_state
from waterline.engine.storage import delta_table, is_delta_table


def is_table(path: str) -> bool:
    return is_delta_table(path)


def row_count(path: str) -> int | None:
    """Rows in the table's current version, from the Delta log's file statistics."""
    if not is_delta_table(path):
        return None
    import pyarrow as pa

    actions = pa.table(delta_table(path).get_add_actions(flatten=True))
    if actions.num_rows == 0:
        return 0
    counts = actions.column("num_records").to_pylist()
    if any(c is None for c in counts):  # files written without statistics
        return None
    return int(sum(counts))


def column_schema(path: str):
    """The table's columns as a Dagster ``TableSchema`` (None if there is no table)."""
    from dagster import TableColumn, TableSchema
    if not is_delta_table(path):
        return None
    columns = []
    for field in delta_table(path).schema().fields:
        dtype = getattr(field.type, "type", None) or str(field.type)
        columns.append(TableColumn(name=field.name, type=str(dtype)))
    return TableSchema(columns=columns)


def waterline_states(path: str, limit: int | None = None) -> list[tuple[int, dict[str, Any]]]:
    """``(version, state)`` of the table's waterline commits, oldest first."""
    if not is_delta_table(path):
        return []
    out = []
    for commit in delta_table(path).history(limit):
        state = parse_state(commit.get("userMetadata"))
        if state is not None:
            out.append((int(commit["version"]), state))
    out.sort(key=lambda item: item[0])
    return out


def snapshot_state(path: str) -> tuple[int, dict[str, Any]] | None:
    """The table's current version and the waterline state in force at it.

    Reading the rows of exactly that version (``versionAsOf``) pairs them with
    the right W_T even while a release commits concurrently.
    """
    if not is_delta_table(path):
        return None
    table = delta_table(path)
    version = table.version()
    for commit in table.history(50):
        if int(commit["version"]) > version:
            continue
        state = parse_state(commit.get("userMetadata"))
        if state is not None:
            return version, state
    return version, {}
