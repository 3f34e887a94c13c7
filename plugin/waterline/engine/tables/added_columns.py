"""A new output column on a live feed: held and every tier table gain it, nullable. No JVM.

docs/semantics.md, "When the spec changes": `waterline apply` adds a column the spec's
output gained to the held table and to each tier table as one Delta ``metaData`` commit
per table (what Spark's ``ALTER TABLE ... ADD COLUMNS`` commits), written by the engine's
one commit writer (`waterline.engine.delta.commit.write_commit`). The column goes at the
end of each table's schema, as Delta's own schema evolution puts it: no data file is
rewritten, Parquet is read by name, so every file written before reads NULL in it, and no
column moves (a tier keeps statistics on its first 32 columns: the same ones). Held's
payload columns after its system columns are thus exactly the columns added by `apply`,
in the order they were added, which the row hash relies on
(`waterline.engine.core.columns.added_payload`).

Crash-safe by being idempotent: each table is changed only when it lacks the column, so a
run killed between two tables is finished by the next `apply`, and the applied spec
records its version only after every table has every column (`applied_spec.apply_spec`).
"""

from __future__ import annotations

import json
import re
from typing import Mapping

from waterline.engine.core import faults
from waterline.engine.core.races import SkippedCommit
from waterline.engine.delta.commit import schema_commit, table_unsupported, write_commit
from waterline.engine.delta.table_log import TableLog
from waterline.errors import WaterlineError
from waterline.spec import FeedSpec

OPERATION = "ADD COLUMNS"  # Spark's name for the same commit: readers and `rows_changed_by_others` know it

#: Spark's ``simpleString`` of a type -> the Delta schema's name for it.
_PRIMITIVES = {"string": "string", "bigint": "long", "int": "integer", "smallint": "short", "tinyint": "byte",
               "double": "double", "float": "float", "boolean": "boolean", "binary": "binary", "date": "date",
               "timestamp": "timestamp", "timestamp_ntz": "timestamp_ntz"}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def delta_type(column: str, spark_type: str) -> str:
    """The Delta schema type of a Spark type string; a type it cannot spell without Spark (an
    unknown, nested or unusual type) raises `WaterlineError` in one line naming the column."""
    kind = spark_type.strip().lower()
    if kind in _PRIMITIVES:
        return _PRIMITIVES[kind]
    match = _DECIMAL.fullmatch(kind)
    if match:
        return f"decimal({match.group(1)},{match.group(2)})"
    shown = spark_type or "not known without Spark"
    raise WaterlineError(f"column {column} added: its type ({shown}) cannot be added by apply; give it a "
                         "primitive type in the transform, e.g. CAST({column} AS STRING)".replace("{column}", column))


def feed_tables(spec: FeedSpec) -> list[str]:
    """The tables that gain an added column: held, then every tier of the spec that exists."""
    return [spec.held_path, *[spec.tier_path(t) for t in spec.tiers]]


def add_columns(spec: FeedSpec, columns: Mapping[str, str]) -> dict[str, int]:
    """Add ``columns`` (name -> Spark type, in order) to every table of `feed_tables` that
    exists and lacks them, as nullable columns: table path -> the version committed (tables
    that had them all are left as they are). Run under the feed lease."""
    fields = [{"name": c, "type": delta_type(c, t), "nullable": True, "metadata": {}} for c, t in columns.items()]
    done: dict[str, int] = {}
    for path in feed_tables(spec):
        log = TableLog.open(path)
        if not log.exists:  # a tier not created yet: created with the output's schema at its first release
            continue
        version = _add_to(log, fields)
        if version is not None:
            done[path] = version
            faults.boundary(faults.APPLY_AFTER_TABLE)
    return done


def _add_to(log: TableLog, fields: list[dict]) -> int | None:
    reason = table_unsupported(log)
    if reason is not None:
        raise WaterlineError(f"table {log.path}: apply cannot add columns to it ({reason}); "
                             "add them with Spark's ALTER TABLE ADD COLUMNS, then run apply again")
    base = log.snapshot()
    schema = json.loads(base.metadata.schema_string)
    have = {f["name"].lower() for f in schema["fields"]}
    missing = [f for f in fields if f["name"].lower() not in have]
    if not missing:
        return None
    schema["fields"] = [*schema["fields"], *missing]
    commit = schema_commit(json.dumps(schema, separators=(",", ":")), [f["name"] for f in missing])
    try:
        return write_commit(base, commit)
    except SkippedCommit as exc:  # another writer changed the schema first: one line, apply again
        raise WaterlineError(f"table {log.path}: changed while apply added columns ({exc}); run apply again") from exc


__all__ = ["OPERATION", "add_columns", "delta_type", "feed_tables"]
