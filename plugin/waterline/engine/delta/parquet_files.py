"""Parquet files a stage wrote, as a Delta commit names them: from a listing and their footers. No JVM.

A staged release writes its files with Spark and commits them itself
(`waterline.engine.delta.commit`), so the add actions' sizes, partition
values and statistics come from here: one listing of the stage folder and one
ranged read of each file's footer, instead of a Spark pass over the files.

Statistics (`waterline.engine.delta.file_stats`): the row count, per column the null
count, and min/max in the form Spark's Delta writer gives them, for every type it
bounds (integers, booleans, dates, timestamps, decimals, floats, strings), each one
never narrower than the file's values; a file holding a value no bound can be written
for gets none at all, which no reader skips a file by. The columns are the table's
``delta.dataSkippingStatsColumns`` when it lists them (struct leaves included, as the
held table's list has them), else every top-level column.

The writes waterline commits itself (held appends, staged releases) use its own
output committer (``jvm/src/dev/waterline/spark/AttemptFolderCommitter.java``):
each task attempt writes into its own ``attempt_*`` folder and marks its commit
with an empty file, and only marked attempts' files are data (`data_files`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.parquet as pq

from waterline.engine.delta import storage
from waterline.engine.delta.actions import AddFile, CdcFile
from waterline.engine.delta.file_stats import Path, delta_stats  # noqa: F401 (delta_stats: re-exported)
from waterline.engine.delta.objects import StoredObject, list_tree, read_tail

#: The table property that names the columns Delta keeps statistics for.
STATS_COLUMNS = "delta.dataSkippingStatsColumns"
#: What `AttemptFolderCommitter` names a task attempt's folder (a prefix) and its commit marker.
ATTEMPT_PREFIX = "attempt_"
TASK_COMMITTED = "task-committed"
_TAIL = 64 * 1024  # one read holds the footer of any file a stage writes; longer ones take a second
_MAGIC = b"PAR1"


@dataclass(frozen=True)
class WrittenFile:
    """One data file under a table: ``path`` relative to the table, URL-encoded as Delta writes it."""

    path: str
    partition_values: dict[str, str]
    size: int
    modified_ms: int
    stats: str | None = None

    def add_action(self) -> AddFile:
        """The file as a Delta ``add`` action (data that changes the table)."""
        return AddFile(path=self.path, partition_values=self.partition_values, size=self.size,
                       modification_time=self.modified_ms, data_change=True, stats=self.stats)

    def cdc_action(self) -> CdcFile:
        """The file as a Delta ``cdc`` action (change rows of the commit)."""
        return CdcFile(path=self.path, partition_values=self.partition_values, size=self.size)


def written_files(table: str, folder: str, *, stats: bool,
                  columns: Sequence[Path] | None = None) -> list[WrittenFile]:
    """The Parquet files Spark wrote under ``table``/``folder`` (a Hive-partitioned folder),
    with Delta statistics read from their footers when ``stats`` (of ``columns``, see
    `delta_stats`)."""
    root = storage.join(table, folder)
    out = []
    for obj in data_files(root):
        relative = f"{folder.strip('/')}/{obj.relative}"
        out.append(WrittenFile(
            path=quote(relative, safe="/=:@+,;&$!*'()~"),
            partition_values=_partition_values(obj.relative),
            size=obj.size,
            modified_ms=int(obj.modified_s * 1000),
            stats=delta_stats(footer(storage.join(root, obj.relative), obj.size), columns) if stats else None,
        ))
    return out


def data_files(root: str) -> list[StoredObject]:
    """The Parquet files a Spark write left under the folder ``root``, in path order: not
    Spark's ``_SUCCESS`` and checksum files, and, under a task attempt's folder
    (`AttemptFolderCommitter`; a partitioned write puts the partition folders inside it),
    only when that attempt committed: a failed or killed attempt's files are never data."""
    listed = list_tree(root)
    committed = {parent for parent, _, name in (o.relative.rpartition("/") for o in listed) if name == TASK_COMMITTED}
    out = []
    for obj in listed:
        folders = obj.relative.split("/")
        name = folders.pop()
        if not name.endswith(".parquet") or name.startswith((".", "_")):
            continue
        attempt = next((i for i, f in enumerate(folders) if f.startswith(ATTEMPT_PREFIX)), None)
        if attempt is not None and "/".join(folders[:attempt + 1]) not in committed:
            continue
        out.append(obj)
    return sorted(out, key=lambda o: o.relative)


# What Spark escapes in a partition folder's name (ExternalCatalogUtils.escapePathName).
_ESCAPED = frozenset('"#%\'*/:=?\\\x7f{[]^') | frozenset(chr(c) for c in range(1, 32))


def partition_folder(column: str, value: str) -> str:
    """``column=value`` as Spark names a partition's folder (``%XX`` escapes), which
    `written_files` reads back as the file's partition value."""
    def escape(text: str) -> str:
        return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in text)

    return f"{escape(column)}={escape(value)}"


def _partition_values(relative: str) -> dict[str, str]:
    """``a=1/b=x%3Ay/part-0.parquet`` -> {"a": "1", "b": "x:y"} (Spark escapes values as %XX)."""
    values = {}
    for segment in relative.split("/")[:-1]:
        name, sep, value = segment.partition("=")
        if sep:
            values[unquote(name)] = unquote(value)
    return values


def footer(uri: str, size: int) -> pq.FileMetaData:
    """The Parquet footer of the file at ``uri`` (``size`` bytes long), in one or two ranged reads."""
    tail = read_tail(uri, size, _TAIL)
    if tail[-4:] != _MAGIC:
        raise ValueError(f"{uri}: not a Parquet file (no footer)")
    needed = int.from_bytes(tail[-8:-4], "little") + 8
    if needed > len(tail):
        tail = read_tail(uri, size, needed)
    return pq.read_metadata(pa.BufferReader(tail))


def stats_columns(configuration: Mapping[str, str]) -> tuple[Path, ...] | None:
    """The columns a table's ``delta.dataSkippingStatsColumns`` names (None: it names none).

    Commas separate columns, dots struct levels, backquotes quote (a doubled one is
    a backquote): ``a.b, `c.d`.e`` gives ``("a", "b"), ("c.d", "e")``."""
    text = configuration.get(STATS_COLUMNS, "")
    columns: list[Path] = []
    levels: list[str] = []
    name: list[str] = []
    quoted = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "`" and quoted and text.startswith("``", i):
            name.append("`")
            i += 1
        elif ch == "`":
            quoted = not quoted
        elif quoted or ch not in ".," and not ch.isspace():
            name.append(ch)
        elif ch in ".,":
            levels.append("".join(name))
            name = []
            if ch == ",":
                columns.append(tuple(levels))
                levels = []
        i += 1
    levels.append("".join(name))
    columns.append(tuple(levels))
    found = tuple(c for c in columns if any(c))
    return found or None
