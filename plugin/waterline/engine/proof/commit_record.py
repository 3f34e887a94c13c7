"""What a table's log says of each retained commit: when it committed, by two witnesses, and to what W_T.

The release proof needs, per commit, an instant by which the commit had certainly happened.
Two witnesses give one: the object store's time of the commit file (set by the store, not by
the writer's clock; S3 keeps whole seconds) and the writer's ``commitInfo.timestamp`` (whole
milliseconds). Each says "at some instant in ``[t, t + resolution)``"; the commit had
happened before the earlier of the two upper ends, whichever clock was wrong the other way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from waterline.engine.delta import storage
from waterline.engine.delta.actions import AddFile, CdcFile, RemoveFile
from waterline.engine.delta.objects import list_tree
from waterline.engine.delta.table_log import ROW_PRESERVING, TableLog, parse_state, read_commit

_COMMIT_FILE = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT_FILE = re.compile(r"^(\d{20})\.checkpoint(\.[^/]*)?\.parquet$")
#: Resolution of a store's object times: S3 keeps whole seconds; a local file system far less.
_S3_RESOLUTION_US, _LOCAL_RESOLUTION_US = 1_000_000, 1_000
_WRITER_RESOLUTION_US = 1_000  # commitInfo.timestamp is in milliseconds
_ENABLE_CDF = "delta.enableChangeDataFeed"


@dataclass(frozen=True)
class CommitRecord:
    """One retained commit of a table."""

    version: int
    committed_us: int  # the commit had happened before this instant (both witnesses agree)
    store_us: int | None  # the store's time of the commit file (None: not listed)
    writer_us: int  # the writer's commitInfo.timestamp
    operation: str
    changes_rows: bool  # False for commits that keep every row (OPTIMIZE, properties, vacuum)
    w_us: int | None = None  # W_T recorded by the commit (waterline's commits)
    seq: int | None = None
    spec: int | None = None  # the applied spec version it was released under (None: not recorded)


def commit_records(log: TableLog) -> tuple[dict[int, CommitRecord], int | None]:
    """Every retained commit of ``log``'s table by version, and the first version whose state
    a reader can still rebuild (0 while the first commit file is kept, else the oldest
    checkpoint: log cleanup deletes the commits before it); None for an absent table."""
    if not log.exists:
        return {}, None
    resolution = _S3_RESOLUTION_US if storage.is_s3(log.path) else _LOCAL_RESOLUTION_US
    listed = list_tree(storage.join(log.path, "_delta_log"))
    stored = {int(m.group(1)): int(o.modified_s * 1_000_000) for o in listed if (m := _COMMIT_FILE.match(o.relative))}
    checkpoints = [int(m.group(1)) for o in listed if (m := _CHECKPOINT_FILE.match(o.relative))]
    readable = 0 if 0 in stored else min(checkpoints, default=min(stored, default=0))
    out: dict[int, CommitRecord] = {}
    for commit in log.history(log.version + 1):
        version, writer_us = int(commit["version"]), int(commit["timestamp"]) * 1000
        store_us = stored.get(version)
        upper = writer_us + _WRITER_RESOLUTION_US
        if store_us is not None:
            upper = min(upper, store_us + resolution)
        state = parse_state(commit.get("userMetadata")) or {}
        operation = str(commit.get("operation") or "")
        w = state.get("w")
        out[version] = CommitRecord(
            version=version, committed_us=upper, store_us=store_us, writer_us=writer_us, operation=operation,
            changes_rows=operation not in ROW_PRESERVING, w_us=None if w is None else int(w),
            seq=None if state.get("seq") is None else int(state["seq"]),
            spec=None if state.get("spec") is None else int(state["spec"]))
    return out, readable


def change_feed_since(log: TableLog, retained: list[int]) -> int | None:
    """The first of the ``retained`` versions (ascending) from which the table records its
    change data feed, or None when its newest version does not. A feed is switched on once
    and kept (waterline never switches it off), so the versions that have it are a suffix."""
    def enabled(version: int) -> bool:
        return TableLog.open(log.path, version=version).configuration.get(_ENABLE_CDF, "").lower() == "true"

    if not retained or not enabled(retained[-1]):
        return None
    lo, hi = 0, len(retained) - 1  # retained[hi] has it; find the first that does
    while lo < hi:
        mid = (lo + hi) // 2
        if enabled(retained[mid]):
            hi = mid
        else:
            lo = mid + 1
    return retained[lo]


def change_data_missing(log: TableLog, versions: Iterable[int]) -> list[int]:
    """Those of ``versions`` whose change data can no longer be read: a file it comes from was
    vacuumed (a commit's change-data files; without any, its data-changing adds and removes,
    which Delta reads as inserts and deletes). One listing of the table, one read per commit."""
    present = {o.relative for o in list_tree(log.path)}
    missing = []
    for version in versions:
        actions = read_commit(log.path, version) or []
        cdc = [a.path for a in actions if isinstance(a, CdcFile)]
        needed = cdc or [a.path for a in actions if isinstance(a, AddFile | RemoveFile) and a.data_change]
        if any("://" not in path and unquote(path) not in present for path in needed):
            missing.append(version)
    return missing
