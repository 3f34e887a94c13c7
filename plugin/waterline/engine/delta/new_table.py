"""Version 0 of a table waterline creates (held, tiers, event logs), written without Spark.

Creating an empty table through Spark's Delta writer runs a job for no rows and costs
0.7-0.8 s a table on a warm JVM; a stream's first drain creates the held table and every
tier. Version 0 is only a commit file (protocol, metadata, provenance), so it is written
like any other commit of ours: created only if absent, so of two creators exactly one
wins and the other reads the winner's schema.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping

from waterline.engine.delta.actions import CommitInfo, Metadata, Protocol, encode_commit, parse_commit
from waterline.engine.delta.objects import create_if_absent, read_object
from waterline.engine.delta.table_log import commit_path

ENGINE_INFO = "waterline"


def create_table(path: str, *, schema_json: str, protocol: Protocol, operation: str,
                 partition_columns: tuple[str, ...] = (), configuration: Mapping[str, str] | None = None,
                 parameters: Mapping[str, str] | None = None, user_metadata: str | None = None,
                 description: str | None = None) -> str | None:
    """Write version 0 of the table at ``path`` unless it has one: None if this call (or an
    earlier try of it) created the table, else the schema JSON of the table another writer
    created first ("" if its version 0 has no metadata), for the caller to compare."""
    now = int(time.time() * 1000)
    actions = [
        CommitInfo(timestamp=now, operation=operation, operation_parameters=dict(parameters or {}),
                   is_blind_append=True, user_metadata=user_metadata, engine_info=ENGINE_INFO,
                   txn_id=uuid.uuid4().hex),
        protocol,
        Metadata(id=str(uuid.uuid4()), schema_string=schema_json, partition_columns=tuple(partition_columns),
                 configuration=dict(configuration or {}), description=description, created_time=now),
    ]
    first = commit_path(path, 0)
    if create_if_absent(first, encode_commit(actions)):
        return None
    winner = next((a for a in parse_commit(read_object(first) or b"") if isinstance(a, Metadata)), None)
    return "" if winner is None else winner.schema_string
