"""Files that log cleanup and vacuum leave behind, which would grow a table's folders forever.

deltalake's log cleanup deletes expired commit files but keeps every older checkpoint and
Spark's ``N.crc`` checksum files; its vacuum skips hidden files, so the ``.name.crc``
checksums Hadoop's local file system writes beside every file Spark writes outside S3 stay
after their file is gone. A day of hourly maintenance adds a few of each per hour; a year,
tens of thousands, which every snapshot load then lists. These functions name them; the
caller (``maintain``, under the feed lease) deletes them.
"""

from __future__ import annotations

import re

from waterline.engine.delta import storage
from waterline.engine.delta.objects import StoredObject, list_tree

_LOG_FILE = re.compile(r"^\.?(\d{20})\.(json|crc|checkpoint(\.[^/]+)?\.parquet)(\.crc)?$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\.[^/]+)?\.parquet$")
_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKSUM = re.compile(r"^\.(.+)\.crc$")


def log_leftovers(path: str, *, older_than_s: float, now_s: float) -> list[str]:
    """Files of ``path``'s ``_delta_log`` (URIs) from before the state its oldest commit file
    is rebuilt from (the newest checkpoint at or before it) and older than ``older_than_s``:
    older checkpoints, checksum files and their hidden ``.crc`` siblings. Nothing while the
    first commit file is kept (the log was never cleaned)."""
    log = storage.join(path, "_delta_log")
    listed = [o for o in list_tree(log) if "/" not in o.relative]
    commits = [int(m.group(1)) for o in listed if (m := _COMMIT.match(o.relative))]
    if not commits or min(commits) == 0:
        return []
    oldest = min(commits)
    bases = [int(m.group(1)) for o in listed if (m := _CHECKPOINT.match(o.relative)) and int(m.group(1)) <= oldest]
    if not bases:
        return []
    base = max(bases)
    cutoff = now_s - older_than_s
    return [storage.join(log, o.relative) for o in listed
            if (m := _LOG_FILE.match(o.relative)) and int(m.group(1)) < base and o.modified_s < cutoff]


def checksum_leftovers(path: str, *, older_than_s: float, now_s: float) -> list[str]:
    """Hidden ``.name.crc`` files under a local table's data folders (not its log) whose
    ``name`` is gone, older than ``older_than_s`` (URIs); none on S3, where Spark writes no
    checksum files."""
    if storage.is_s3(path):
        return []
    listed: list[StoredObject] = list_tree(path)
    present = {o.relative for o in listed}
    cutoff = now_s - older_than_s
    out = []
    for o in listed:
        folder, _, name = o.relative.rpartition("/")
        m = _CHECKSUM.match(name)
        if m is None or o.relative.startswith("_delta_log/") or o.modified_s >= cutoff:
            continue
        sibling = f"{folder}/{m.group(1)}" if folder else m.group(1)
        if sibling not in present:
            out.append(storage.join(path, o.relative))
    return out


def prune_empty_folders(path: str, *, older_than_s: float, now_s: float) -> int:
    """Remove the empty folders under a local table not changed for ``older_than_s`` (vacuum
    deletes files, not the folders stages and partitions leave; a younger one may be a
    stage being written); the number removed. Nothing on S3, which has no folders."""
    root = storage.local_folder(path)
    if root is None or not root.is_dir():
        return 0
    cutoff = now_s - older_than_s
    removed = 0
    log = root / "_delta_log"  # Delta's own folders (``_staged_commits``) stay, empty or not
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if folder == log or log in folder.parents or any(folder.iterdir()) or folder.stat().st_mtime >= cutoff:
            continue
        folder.rmdir()
        removed += 1
    return removed


__all__ = ["checksum_leftovers", "log_leftovers", "prune_empty_folders"]
