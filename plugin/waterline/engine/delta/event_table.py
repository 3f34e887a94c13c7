"""An append-only Delta table of events, written without Spark: the entitlement trail, access logs.

Any number of processes append small batches (one Parquet file and one commit each) to one
table. A batch reads no row of the table, so it goes after whatever other writers committed
first, as Delta lets concurrent blind appends go in any order (`waterline.engine.delta.rebase`,
``reads_nothing``); the commit goes through the one commit writer (`write_commit`): created only
if absent, a lost answer read back, so a batch is never lost to a race and never written twice.
Readers are any Delta reader; `EventTable.read` uses deltalake.
"""

from __future__ import annotations

import io
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import Schema as DeltaSchema

from waterline.engine.core.races import SkippedCommit
from waterline.engine.delta import storage
from waterline.engine.delta.actions import AddFile, Protocol
from waterline.engine.delta.commit import FileActions, event_commit, schema_commit, write_commit
from waterline.engine.delta.new_table import create_table
from waterline.engine.delta.objects import create_if_absent
from waterline.engine.delta.file_stats import delta_stats, write_parquet
from waterline.engine.delta.rebase import CommitConflict, same_schema
from waterline.engine.delta.table_log import TableLog
from waterline.errors import WaterlineError

#: Rounds of "another writer took the version" one append goes through before giving up.
_APPEND_ROUNDS = 20


class EventTable:
    """The table at ``path`` holding rows of ``schema`` (created by the first append)."""

    def __init__(self, path: str, schema: pa.Schema, *, description: str | None = None) -> None:
        self.path = path
        self.schema = schema
        self.description = description

    def append(self, rows: Sequence[Mapping[str, Any]]) -> int | None:
        """Append ``rows`` as one commit; the version written (None for no rows)."""
        if not rows:
            return None
        table = pa.Table.from_pylist([dict(r) for r in rows], schema=self.schema)
        self._create()
        name = f"part-{uuid.uuid4().hex}.parquet"
        buffer = io.BytesIO()
        write_parquet(table, buffer, compression="snappy")
        body = buffer.getvalue()
        create_if_absent(storage.join(self.path, name), body)  # a new name: "already there" is this write
        meta = pq.read_metadata(pa.BufferReader(body))
        add = AddFile(path=name, partition_values={}, size=len(body), modification_time=int(time.time() * 1000),
                      data_change=True, stats=delta_stats(meta))
        for _ in range(_APPEND_ROUNDS):
            base = TableLog.open(self.path).snapshot()
            try:
                version = write_commit(base, event_commit(FileActions(adds=(add,))))
            except CommitConflict:
                continue  # more writers than rebases in a row: read the table again
            return version
        raise WaterlineError(f"{self.path}: {_APPEND_ROUNDS} rounds of other writers' commits; events not appended")

    def read(self) -> pa.Table:
        """Every event (an empty table before the first append)."""
        log = TableLog.open(self.path)
        return log.to_arrow() if log.exists else self.schema.empty_table()

    def _create(self) -> None:
        """Version 0 (protocol and schema) of a table that has no log yet; a table that exists
        (or that another writer just created) must hold this schema."""
        schema_string = DeltaSchema.from_arrow(self.schema).to_json()
        log = TableLog.open(self.path)
        if log.exists:
            existing: str | None = log.schema_json()
        else:
            existing = create_table(self.path, schema_json=schema_string, protocol=Protocol(1, 2),
                                    operation="CREATE TABLE", description=self.description)
            if existing is None:
                return
        if existing and not same_schema(existing, schema_string) and _added_fields(existing, schema_string):
            self._grow(schema_string)
            return
        if not existing or not same_schema(existing, schema_string):
            raise WaterlineError(f"{self.path}: the table holds another schema than this event log's "
                                 f"({json.loads(existing) if existing else 'no schema'})")

    def _grow(self, schema_string: str) -> None:
        """Add the trailing nullable columns this event log's schema has and the table's lacks
        (a newer waterline keeps more per event): one ``ADD COLUMNS`` commit, as Spark's schema
        evolution writes it; files written before read NULL in them."""
        for _ in range(_APPEND_ROUNDS):
            log = TableLog.open(self.path)
            existing = log.schema_json()
            if existing and same_schema(existing, schema_string):
                return  # another writer grew it first
            added = _added_fields(existing or "", schema_string)
            if not added:
                break
            try:
                write_commit(log.snapshot(), schema_commit(schema_string, added))
                return
            except (CommitConflict, SkippedCommit):
                continue
        raise WaterlineError(f"{self.path}: the table's schema could not be grown to this event log's")


def _added_fields(existing: str, wanted: str) -> list[str]:
    """The names of the nullable fields ``wanted`` adds after all of ``existing``'s (a schema
    that only grew at its end); [] when it changed otherwise."""
    old, new = (json.loads(s)["fields"] for s in (existing, wanted))
    if len(new) <= len(old) or any(not same_schema(json.dumps({"fields": [a]}), json.dumps({"fields": [b]}))
                                   for a, b in zip(old, new)):
        return []
    extra = new[len(old):]
    return [f["name"] for f in extra] if all(f.get("nullable", True) for f in extra) else []
