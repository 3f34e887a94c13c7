"""Stage folders: files Spark wrote under a table that no commit names yet. No JVM.

Held appends and pre-staged releases have Spark write their Parquet files into
``<table>/wl-staged/<token>/`` and then make one Delta commit of their own that
names them (`waterline.engine.delta.commit`); until then no Delta reader sees
them. A stage that never commits (a discarded stage, a crash between the write
and the commit) is an orphan: `orphan_tokens` finds the ones `waterline gc` and
`waterline maintain` may delete. A stage's files are deleted only when no
retained commit names its token: a commit that landed keeps its files whatever
the writer believed (`discard_stage`'s callers check that first).
"""

from __future__ import annotations

import logging

from waterline.engine.delta import storage
from waterline.engine.delta.objects import delete_tree, list_tree
from waterline.engine.delta.table_log import TableLog, parse_state

log = logging.getLogger(__name__)

#: The folder under each table that holds staged files. Not hidden (no ``_``/``.``
#: prefix): Delta's own VACUUM then also deletes what a crash left there.
STAGE_DIR = "wl-staged"
#: A stage is committed within this long of being computed, or never.
MAX_STAGE_AGE_US = 30 * 60 * 1_000_000
#: gc deletes uncommitted stages older than this (well past `MAX_STAGE_AGE_US`).
GC_AFTER_S = 2 * 3600.0


def table_stage_folder(table: str, token: str) -> str:
    """The folder under ``table`` (a tier or the held table) for the files of commit ``token``."""
    return storage.join(table, STAGE_DIR, token)


def discard_stage(table: str, token: str) -> None:
    """Delete the files of stage ``token`` under ``table``, which no commit names (best
    effort: gc deletes what this leaves)."""
    try:
        delete_tree(table_stage_folder(table, token))
    except Exception as exc:  # noqa: BLE001
        log.warning("table %s: staged files of %s left for gc: %s", table, token, exc)


def orphan_tokens(table: str, *, now_s: float, older_than_s: float = GC_AFTER_S) -> list[str]:
    """The stage folders under ``table`` safe to delete: never committed and older than ``older_than_s``.

    A stage counts as committed if a retained commit carries its token. A stage older than the
    oldest retained commit cannot be told apart from one whose commit log cleanup removed, so it
    is kept (Delta's VACUUM removes its files once they are unreferenced and past retention).
    """
    objects = list_tree(storage.join(table, STAGE_DIR))
    if not objects:
        return []
    newest: dict[str, float] = {}
    for o in objects:
        token = o.relative.split("/", 1)[0]
        newest[token] = max(newest.get(token, 0.0), o.modified_s)
    table_log = TableLog.open(table)
    history = table_log.history(max((table_log.version or 0) + 1, 1))
    tokens = {s.get("token") for c in history if (s := parse_state(c.get("userMetadata"))) is not None}
    oldest_commit_s = min((c.get("timestamp", 0) for c in history), default=0) / 1000
    return sorted(
        token for token, modified in newest.items()
        if token not in tokens and now_s - modified > older_than_s and modified > oldest_commit_s
    )
