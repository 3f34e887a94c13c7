"""The feature gate: which tables waterline's own commit writer may write. Pure.

A Delta writer must honour every feature a table's protocol lists. The writer
in `waterline.engine.delta.commit` honours change data (it writes ``cdc``
files) and features it only has to leave alone while they constrain nothing
it writes; any other table (deletion vectors, row tracking, in-commit
timestamps, column mapping, identity columns ...) takes Spark's Delta writer.
"""

from __future__ import annotations

import logging

from waterline.engine.delta.actions import Metadata, Protocol

#: Writer features whose obligations this writer meets: change data (it writes ``cdc``
#: files), and features it only has to leave alone while they constrain nothing here
#: (append-only, invariants, constraints and generated columns are refused below when set).
WRITER_FEATURES = frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed",
                             "generatedColumns", "timestampNtz"})
READER_FEATURES = frozenset({"timestampNtz"})
logger = logging.getLogger(__name__)

_FIELD_METADATA_REFUSED = ("delta.invariants", "delta.generationExpression", "delta.identity")

#: Table properties that, set by a session's defaults, turn on a feature this writer does
#: not honour: waterline creates its own tables with those defaults set aside.
OWN_TABLE_FEATURES = ("delta.enableDeletionVectors", "delta.enableRowTracking", "delta.enableInCommitTimestamps")


def unsupported(protocol: Protocol, metadata: Metadata) -> str | None:
    """Why this writer must not commit to a table with ``protocol`` and ``metadata`` (Spark's
    writer must), or None."""
    reader = set(protocol.reader_features or ())
    if protocol.min_reader_version > 1 and (protocol.min_reader_version != 3 or reader - READER_FEATURES):
        return f"reader protocol {protocol.min_reader_version} {sorted(reader - READER_FEATURES)}"
    if protocol.min_writer_version == 7:
        extra = set(protocol.writer_features or ()) - WRITER_FEATURES
        if extra:
            return f"writer features {sorted(extra)}"
    elif protocol.min_writer_version > 4:  # 5: column mapping, 6: identity columns
        return f"writer protocol {protocol.min_writer_version}"
    config = metadata.configuration
    if config.get("delta.appendOnly", "").lower() == "true":
        return "delta.appendOnly"
    if any(k.startswith("delta.constraints.") for k in config):
        return "CHECK constraints"
    if config.get("delta.columnMapping.mode", "none") != "none":
        return "column mapping"
    for key in _FIELD_METADATA_REFUSED:
        if f'"{key}"' in metadata.schema_string:
            return key
    return None


_warned: set[str] = set()


def warn_slow_path(table: str, reason: str) -> None:
    """Say once per table and process, at WARNING, that a table takes Spark's slower writer
    because this writer does not honour it: a session default (deletion vectors, row
    tracking ...) can turn that on silently for a table someone else created."""
    if table in _warned:
        return
    _warned.add(table)
    logger.warning("table %s: written by Spark's Delta writer, not waterline's (%s); releases at the instant "
                   "and held appends are slower. waterline creates its own tables without such features.",
                   table, reason)
