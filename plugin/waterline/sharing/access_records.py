"""The sharing server's access log as data: records batched into an append-only Delta table.

Every request's record (recipient, token id, time, endpoint, table, version, files, rows,
status) is queued without blocking the request; one background thread appends what is
queued every ``flush_s`` seconds (2 by default) as one batch (`waterline.engine.delta.event_table`:
one Parquet file and one commit, created only if absent, committed after other servers'
batches when it loses a race), so several server processes or machines append to one log.
A batch that cannot be written stays queued for the next flush (up to ``max_pending``
records; beyond that the oldest are dropped and counted). A crash loses at most the records
of the last ``flush_s`` seconds; stopping the server flushes them. The records go to the
``waterline.sharing.access`` log lines too, as before.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from waterline.engine.delta import storage
from waterline.engine.delta.event_table import EventTable

TABLE = "access"
log = logging.getLogger(__name__)

SCHEMA = pa.schema([
    ("at", pa.timestamp("us", tz="UTC")),
    ("recipient", pa.string()),
    ("token_id", pa.string()),
    ("method", pa.string()),
    ("endpoint", pa.string()),
    ("table", pa.string()),
    ("version", pa.int64()),  # the snapshot served; for a change query, the last version
    ("from_version", pa.int64()),  # a change query's first version
    ("files", pa.int64()),
    ("rows", pa.int64()),
    ("status", pa.int32()),
    ("ms", pa.float64()),
    ("refused", pa.string()),
])


def access_path(store_where: str) -> str:
    """The access log of the token store at ``store_where``: the folder ``access`` beside it."""
    return storage.beside(store_where, TABLE)


class AccessRecords:
    """Queue access records and append them to the table at ``path`` in batches."""

    def __init__(self, path: str, *, flush_s: float = 2.0, max_pending: int = 100_000) -> None:
        self.path = path
        self.flush_s = flush_s
        self.max_pending = max_pending
        self.dropped = 0
        self._table = EventTable(path, SCHEMA, description="waterline sharing access log")
        self._pending: deque[tuple[int, dict[str, Any]]] = deque()  # (sequence number, record)
        self._seq = 0
        self._lock = threading.Lock()
        self._flushing = threading.Lock()  # one batch at a time: a record is never written twice
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def record(self, fields: Mapping[str, Any]) -> None:
        """Queue one request's record (never blocks on the store)."""
        row = {name: fields.get(name) for name in SCHEMA.names}
        row["at"] = datetime.fromtimestamp(fields.get("at_s", time.time()), UTC)
        with self._lock:
            self._seq += 1
            self._pending.append((self._seq, row))
            while len(self._pending) > self.max_pending:
                self._pending.popleft()
                self.dropped += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="waterline-access-log", daemon=True)
                self._thread.start()

    def flush(self) -> int:
        """Append what is queued now, as one batch; the number of records written."""
        with self._flushing:
            with self._lock:
                batch = list(self._pending)
            if not batch:
                return 0
            self._table.append([row for _, row in batch])
            last = batch[-1][0]
            with self._lock:  # drop what was written (records queued meanwhile stay, in order)
                while self._pending and self._pending[0][0] <= last:
                    self._pending.popleft()
            return len(batch)

    def close(self) -> None:
        """Stop the background thread and write what is still queued."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.flush()

    def read(self) -> pa.Table:
        return self._table.read()

    def records(self) -> list[dict[str, Any]]:
        """Every record written, oldest first, ``at`` in µs."""
        rows = self.read().to_pylist()
        for row in rows:
            row["at"] = int(row["at"].timestamp() * 1_000_000)
        return sorted(rows, key=lambda r: r["at"])

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.flush_s)
            if self._stop.is_set():
                return
            try:
                self.flush()
            except Exception as exc:  # noqa: BLE001  (the records stay queued; the next flush tries again)
                log.warning("sharing access log %s: batch not written, kept for the next try: %s", self.path, exc)
