"""The files a compaction wrote, described again with waterline's statistics. No JVM.

Compaction is Delta's OPTIMIZE (`waterline.engine.upkeep.maintain`, `.gc`), and Spark's
writer describes a file in forms delta-kernel's readers (deltalake, polars, DuckDB) read
wrongly and skip the file by: ``"NaN"`` as a double's upper bound, no bounds for a boolean
column. So compaction runs with Spark's statistics off (a file without statistics is
read by every reader), and this module then commits the new files again, same paths,
``dataChange`` false, with statistics from their footers
(`waterline.engine.delta.file_stats`): Delta's way of restating a file's statistics.

The restating commit is written on the version right after the compaction or not at
all: a commit in between might have removed a file, which an add would bring back. Its
operation is ``OPTIMIZE`` (it keeps every row, as the compaction did, and waterline's
readers of the log treat it as one).
"""

from __future__ import annotations

import logging
from urllib.parse import unquote

from waterline.engine.delta import storage
from waterline.engine.delta.actions import AddFile, CommitInfo
from waterline.engine.delta.commit import APPEND_ENGINE_INFO, Commit, FileActions, write_commit
from waterline.engine.delta.parquet_files import footer, stats_columns
from waterline.engine.delta.file_stats import delta_stats
from waterline.engine.delta.rebase import CommitConflict
from waterline.engine.delta.table_log import TableLog, read_commit

logger = logging.getLogger(__name__)

#: What Spark's writer is told while compacting: write no statistics.
NO_STATS_CONF = "spark.databricks.delta.stats.collect"
OPERATION = "OPTIMIZE"


def restate_compaction(path: str) -> int:
    """Commit the files the table's newest commit (a compaction) added without statistics
    again, with statistics; the number of files restated (0: nothing to restate, or another
    writer committed first and the files keep no statistics, which every reader reads)."""
    log = TableLog.open(path)
    if not log.exists:
        return 0
    base = log.snapshot()
    actions = read_commit(path, base.version) or []
    if not any(isinstance(a, CommitInfo) and a.operation == OPERATION for a in actions):
        return 0
    bare = [a for a in actions if isinstance(a, AddFile) and a.stats is None]
    if not bare:
        return 0
    columns = stats_columns(base.metadata.configuration)
    adds = tuple(AddFile(path=a.path, partition_values=a.partition_values, size=a.size,
                         modification_time=a.modification_time, data_change=False,
                         stats=delta_stats(footer(storage.join(path, unquote(a.path)), a.size), columns))
                 for a in bare)
    commit = Commit(operation=OPERATION, engine=APPEND_ENGINE_INFO, state=None, files=FileActions(adds=adds),
                    parameters={"statistics": "restated"})
    try:
        write_commit(base, commit, max_rebases=0)
    except CommitConflict:
        logger.info("table %s: another writer committed after the compaction; its files keep no statistics", path)
        return 0
    return len(adds)
