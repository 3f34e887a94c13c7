"""`EventTable`: an append-only Delta table written without Spark by many writers at once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from waterline.engine.delta.event_table import EventTable
from waterline.errors import WaterlineError

SCHEMA = pa.schema([("at", pa.timestamp("us", tz="UTC")), ("writer", pa.int64()), ("batch", pa.int64()),
                    ("what", pa.string())])


def _rows(writer: int, batch: int) -> list[dict]:
    at = datetime(2026, 10, 1, tzinfo=UTC)
    return [{"at": at, "writer": writer, "batch": batch, "what": f"event {i}"} for i in range(3)]


def test_writers_appending_at_once_lose_and_double_nothing(tmp_path):
    path = str(tmp_path / "events")
    errors: list[BaseException] = []

    def write(writer: int) -> None:
        try:
            table = EventTable(path, SCHEMA)
            for batch in range(12):
                table.append(_rows(writer, batch))
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    events = EventTable(path, SCHEMA).read()
    batches = sorted(zip(events.column("writer").to_pylist(), events.column("batch").to_pylist()))
    assert batches == sorted((w, b) for w in range(4) for b in range(12) for _ in range(3))
    from waterline.engine.delta.table_log import TableLog

    log = TableLog.open(path)
    assert log.version == 48  # version 0 creates the table, then one commit per batch
    assert [c["operation"] for c in log.history(60)].count("WRITE") == 48


def test_an_existing_table_of_another_schema_is_refused_and_version_0_never_rewritten(tmp_path):
    path = str(tmp_path / "events")
    table = EventTable(path, SCHEMA)
    for batch in range(12):  # a checkpoint at version 10
        table.append(_rows(0, batch))
    (tmp_path / "events" / "_delta_log" / "00000000000000000000.json").unlink()  # as log cleanup does
    table.append(_rows(1, 0))
    assert table.read().num_rows == 39
    other = EventTable(path, pa.schema([("at", pa.timestamp("us", tz="UTC")), ("n", pa.int64())]))
    with pytest.raises(WaterlineError, match="another schema"):
        other.append([{"at": None, "n": 1}])
    assert EventTable(str(tmp_path / "none"), SCHEMA).read().num_rows == 0
