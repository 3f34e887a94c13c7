"""One Delta table's log as waterline reads it: states, transactions, files. No JVM.

Every commit waterline makes to a held or tier table carries the table's full
state (`waterline.engine.core.state`) as JSON in ``commitInfo.userMetadata``, so
the state and the data it describes land in one atomic Delta commit: a tier's
W_T can never disagree with its rows. Each state has a per-table commit number
``n``, and every Spark data commit also carries a Delta transaction id (``txn``:
app id -> version), which Delta keeps in checkpoints, so it survives log cleanup:

* ``waterline.seq`` on the held table: the ingest sequence of the last append;
* ``waterline.commit`` on every table: the ``n`` of the last waterline data commit.

The state itself also goes into the table property ``waterline.state``
(metadata, kept in checkpoints) whenever the commit history alone could lose it.
Readers take the newest of the property and the retained history, check it
against the transaction versions, and fail, naming the table, rather than guess.

`TableLog` opens the table once (the ``deltalake`` package) and answers every
question of one read from that snapshot: protocol, metadata, history, transactions,
the newest state as raw JSON, files and rows. It knows no feed: what a feed makes of
a table (held and tier states, ingest sequences, commit tokens, held file statistics)
is `waterline.engine.tables.feed_tables`, whose `FeedTables` handle keeps one
`TableLog` per table of a feed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

import pyarrow as pa
from deltalake import DeltaTable

from waterline.engine.delta import storage
from waterline.engine.delta.actions import Action, AddFile, Metadata, Protocol, parse_commit
from waterline.engine.delta.objects import read_object
from waterline.engine.delta.storage import delta_table, is_delta_table
from waterline.errors import WaterlineError

#: The table property that keeps a table's latest state across log cleanup.
PROPERTY = "waterline.state"
#: Delta transaction app ids: held appends carry the new ingest sequence ...
APP_SEQ = "waterline.seq"
#: ... every other waterline data commit the state's commit number ``n``.
APP_COMMIT = "waterline.commit"
#: The key of waterline's state inside a commit's userMetadata JSON.
TAG = "waterline"

_HISTORY_DEPTH = 50
# Commits that never change which rows a table holds; anything else unknown (a RESTORE,
# a DELETE by hand) ends a search for the last state of a partition.
ROW_PRESERVING = frozenset({"OPTIMIZE", "VACUUM START", "VACUUM END", "SET TBLPROPERTIES", "UNSET TBLPROPERTIES",
                            "ADD COLUMNS"})


def commit_path(table: str, version: int) -> str:
    """Where commit file ``version`` of ``table`` lives."""
    return storage.join(table, "_delta_log", f"{version:020d}.json")


def read_commit(table: str, version: int) -> list[Action] | None:
    """The actions of ``table``'s commit file ``version`` as written, whoever wrote it (None when
    there is no such file: not written yet, or removed by log cleanup)."""
    body = read_object(commit_path(table, version))
    return None if body is None else parse_commit(body)


@dataclass(frozen=True)
class Snapshot:
    """One version of a table as a writer builds on it: protocol, metadata, waterline's transactions."""

    path: str
    version: int
    protocol: Protocol
    metadata: Metadata
    transactions: Mapping[str, int] = field(default_factory=dict)


def parse_state(raw: str | None) -> dict[str, Any] | None:
    """The waterline state (JSON object) in a commit's userMetadata, or None if it carries none."""
    if not raw:
        return None
    try:
        payload = json.loads(raw)
    except ValueError:
        return None
    if isinstance(payload, dict) and isinstance(payload.get(TAG), dict):
        return payload[TAG]
    return None


def _json(raw: str | None) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _number(state: dict[str, Any]) -> int:
    return int(state.get("n", -1))


class TableLog:
    """A Delta table's log at one snapshot, or an absent table (``exists`` False).

    Open it with `TableLog.open` once per read; every method answers from that
    one ``DeltaTable`` (commit history is fetched lazily and kept).
    """

    def __init__(self, path: str, table: DeltaTable | None) -> None:
        self.path = path
        self._table = table  # private: every question of the table is a method here
        self._history: list[dict[str, Any]] = []
        self._history_complete = False

    @classmethod
    def open(cls, path: str, *, version: int | None = None) -> TableLog:
        """The table at ``path`` (its latest version, or ``version``); absent tables are allowed."""
        if not is_delta_table(path):
            return cls(path, None)
        table = delta_table(path)
        if version is not None:
            table.load_as_version(version)
        return cls(path, table)

    @property
    def exists(self) -> bool:
        return self._table is not None

    # -- the snapshot's protocol and metadata ------------------------------------------

    def protocol(self) -> Protocol:
        """The table's protocol (reader/writer versions and features) at this snapshot."""
        p = self._require().protocol()
        return Protocol(min_reader_version=p.min_reader_version, min_writer_version=p.min_writer_version,
                        reader_features=None if p.reader_features is None else frozenset(p.reader_features),
                        writer_features=None if p.writer_features is None else frozenset(p.writer_features))

    def metadata(self) -> Metadata:
        """The table's metadata action at this snapshot (schema, partition columns, properties)."""
        m = self._require().metadata()
        return Metadata(id=m.id, schema_string=self._table.schema().to_json(),
                        partition_columns=tuple(m.partition_columns), configuration=dict(m.configuration),
                        name=m.name, description=m.description, created_time=m.created_time)

    @property
    def configuration(self) -> dict[str, str]:
        """The table's properties (empty without a table)."""
        return {} if self._table is None else dict(self._table.metadata().configuration)

    def snapshot(self, *, apps: tuple[str, ...] = ()) -> Snapshot:
        """What a commit written on top of this version builds on (`waterline.engine.delta.commit`):
        with waterline's transactions and those of ``apps`` (a stream's)."""
        return Snapshot(path=self.path, version=self._require().version(), protocol=self.protocol(),
                        metadata=self.metadata(),
                        transactions={app: v for app in (APP_SEQ, APP_COMMIT, *apps)
                                      if (v := self.transaction_version(app)) is not None})

    def commit_actions(self, version: int) -> list[Action] | None:
        """The actions of commit file ``version`` as written (None once log cleanup removed it)."""
        return read_commit(self.path, version)

    def _require(self) -> DeltaTable:
        if self._table is None:
            raise WaterlineError(f"table {self.path}: no Delta table there")
        return self._table

    @property
    def version(self) -> int | None:
        return None if self._table is None else self._table.version()

    # -- history -------------------------------------------------------------------

    def history(self, depth: int = _HISTORY_DEPTH) -> list[dict[str, Any]]:
        """The newest ``depth`` retained commits at or before this snapshot, newest first
        (none for an absent table: its history is complete, and empty)."""
        if self._table is None:
            self._history_complete = True
            return []
        if len(self._history) < depth and not self._history_complete:
            newest = self._table.version()
            commits = [c for c in self._table.history(depth) if int(c["version"]) <= newest]
            self._history = commits
            self._history_complete = len(commits) < depth
        return self._history[:depth]

    def _deeper(self, depth: int) -> tuple[list[dict[str, Any]], bool]:
        """The commits to ``depth`` and whether they are the whole retained log."""
        commits = self.history(depth)
        return commits, self._history_complete and len(commits) <= depth

    def search(self, looking_for: str, first: int = _HISTORY_DEPTH) -> Iterator[list[dict[str, Any]]]:
        """The newest commits, ever deeper (``first``, then ten times as many ...), for a search
        that stops when it found what it looks for; it ends after the whole retained log was
        read. The log has at most ``version + 1`` commits, so a depth past that reads it all;
        a log that still reads as longer raises rather than search on (a reader answering
        ``limit`` more commits than the table has versions would loop forever)."""
        depth = first
        while True:
            commits, complete = self._deeper(depth)
            yield commits
            if complete:
                return
            if self._table is None or depth > self._table.version() + 1:
                raise WaterlineError(
                    f"table {self.path}: {looking_for}: read {len(commits)} commits of a log of "
                    f"{self._table.version() + 1 if self._table is not None else 0} versions and it "
                    "did not end; the table's log is not what its version says")
            depth *= 10

    def waterline_states(self) -> list[tuple[int, dict[str, Any]]]:
        """``(version, state)`` of every retained waterline commit, oldest first."""
        commits, _ = self._deeper(self.version + 1 if self.exists else 0)
        out = [(int(c["version"]), s) for c in commits if (s := parse_state(c.get("userMetadata"))) is not None]
        return sorted(out, key=lambda item: item[0])

    # -- the state -----------------------------------------------------------------

    def transaction_version(self, app: str) -> int | None:
        """The version of Delta transaction ``app`` on the table (kept across log cleanup)."""
        return None if self._table is None else self._table.transaction_version(app)

    def property_state(self) -> dict[str, Any] | None:
        """The state kept in the ``waterline.state`` table property, if any."""
        if self._table is None:
            return None
        prop = _json(self._table.metadata().configuration.get(PROPERTY))
        return prop if isinstance(prop, dict) else None

    def latest_state(self) -> dict[str, Any] | None:
        """The table's current state as JSON, or None if waterline never committed to it.

        The newest of the property and the states in the retained history
        (commits by others carry none and are skipped), checked against the
        ``waterline.commit`` transaction version Delta keeps across log cleanup.
        Raises `WaterlineError` if a newer waterline commit is known than any state found.
        """
        if self._table is None:
            return None
        prop = self.property_state()
        committed = self.transaction_version(APP_COMMIT)
        best: dict[str, Any] | None = prop
        for commits in self.search("its waterline state"):
            found = next((s for c in commits if (s := parse_state(c.get("userMetadata"))) is not None), None)
            best = max([s for s in (found, prop) if s is not None], key=_number, default=None)
            if committed is None or (best is not None and _number(best) >= committed):
                return best
        # the whole retained log read: the state is gone
        raise WaterlineError(
            f"table {self.path}: waterline state lost (last waterline commit n={committed}, newest state "
            f"found n={None if best is None else _number(best)}); restore the table property {PROPERTY}"
        )

    def rows_changed_by_others(self) -> bool:
        """Whether a commit another writer made after the newest waterline commit may have
        changed rows (a RESTORE, a DELETE or UPDATE by hand, a foreign append): commits that
        keep every row (OPTIMIZE, property changes, VACUUM's markers) do not count."""
        if self._table is None:  # no table yet: nobody changed its rows
            return False
        # the newest commit is waterline's nearly always: read few commit files first
        for commits in self.search("the newest waterline commit (rows changed by others?)", first=4):
            for commit in commits:
                if parse_state(commit.get("userMetadata")) is not None:
                    return False
                if commit.get("operation") not in ROW_PRESERVING:
                    return True
        return False

    def last_commit_metrics(self) -> dict[str, int]:
        """The newest commit's operationMetrics (rows inserted, updated, deleted ...)."""
        commits = self.history(1)
        metrics = (commits[0].get("operationMetrics") if commits else None) or {}
        return {k: int(v) for k, v in metrics.items() if str(v).lstrip("-").isdigit()}

    # -- files ---------------------------------------------------------------------

    def file_statistics(self) -> dict[str, list]:
        """The snapshot's add actions as columns (`add_actions`, as a dict of lists): ``path``,
        ``num_records``, ``partition.<column>``, ``min.<column>``, ``max.<column>`` ...; empty
        without a table."""
        return {} if self._table is None else self.add_actions().to_pydict()

    def add_files(self) -> list[AddFile]:
        """The snapshot's data files as typed ``add`` actions, as deltalake keeps them: the path
        as the log has it, partition values as text, and of the statistics the count only."""
        if self._table is None:
            return []
        table = pa.table(self._table.get_add_actions(flatten=False))
        paths, sizes, times, counts = (table.column(k).to_pylist()
                                       for k in ("path", "size_bytes", "modification_time", "num_records"))
        parts = table.column("partition").to_pylist() if "partition" in table.column_names else [{}] * len(paths)
        return [AddFile(path=path, partition_values={k: None if v is None else str(v) for k, v in (part or {}).items()},
                        size=int(size), modification_time=int(time),
                        stats=None if count is None else json.dumps({"numRecords": int(count)}))
                for path, size, time, count, part in zip(paths, sizes, times, counts, parts)]

    def file_uris(self) -> list[str]:
        """The snapshot's data files as absolute URIs (deltalake's ``file_uris``)."""
        return [] if self._table is None else list(self._table.file_uris())

    def row_count(self, where: Mapping[str, Iterable[str]] | None = None) -> int | None:
        """Rows in this version (of the files whose partition values are among ``where``'s,
        column by column, when given), from the files' statistics; None without a table or
        when a file has no statistics."""
        if self._table is None:
            return None
        actions = self.file_statistics()
        counts = actions.get("num_records", [])
        keep = [True] * len(counts)
        for column, values in (where or {}).items():
            wanted = set(values)
            found = actions.get(f"partition.{column}", [None] * len(counts))
            keep = [k and part in wanted for k, part in zip(keep, found)]
        counts = [n for n, k in zip(counts, keep) if k]
        if any(c is None for c in counts):  # files written without statistics
            return None
        return int(sum(counts))

    def schema_json(self) -> str | None:
        """The table's schema as Delta's JSON (None if there is no table)."""
        return None if self._table is None else self._table.schema().to_json()

    def columns(self) -> list[tuple[str, str]]:
        """``(name, type)`` of the table's columns (types as Delta names them); empty without a table."""
        if self._table is None:
            return []
        return [(f.name, str(getattr(f.type, "type", None) or f.type)) for f in self._table.schema().fields]

    def to_arrow(self, columns: list[str] | None = None) -> pa.Table:
        """This version's rows (the whole table: for small tables and tests)."""
        return self._require().to_pyarrow_table(columns=columns)

    def unreferenced_files(self, *, retention_hours: int) -> list[str]:
        """Files under the table (relative paths) that no version within ``retention_hours``
        names and that are older than that: what a vacuum deletes (deltalake's full vacuum,
        as a dry run: nothing is deleted or committed here)."""
        return list(self._require().vacuum(retention_hours=retention_hours, dry_run=True,
                                           enforce_retention_duration=False, full=True))

    def checkpoint_and_clean(self) -> int:
        """A checkpoint of this version, then the cleanup of log files past the table's log
        retention (``delta.logRetentionDuration``); the checkpoint's version."""
        table = self._require()
        table.create_checkpoint()
        table.cleanup_metadata()
        return table.version()

    def add_actions(self) -> pa.Table:
        """The snapshot's add actions as deltalake flattens them (path, size, partition.*, min.*, ...)."""
        return pa.table(self._require().get_add_actions(flatten=True))

    def changes(self, start: int, end: int) -> pa.Table:
        """The change data feed of versions ``start`` to ``end`` (deltalake's ``load_cdf``)."""
        return pa.table(self._require().load_cdf(starting_version=start, ending_version=end).read_all())
