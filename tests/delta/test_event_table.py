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


def test_a_schema_grown_at_its_end_adds_nullable_columns_and_earlier_rows_read_null(tmp_path):
    """A newer waterline keeps more per event (the kept proofs' ``spec``): an existing table
    gains the trailing nullable columns in one ADD COLUMNS commit, rows written before read
    NULL in them, and an older writer's schema is refused rather than dropping the column."""
    import deltalake

    from waterline.engine.delta.table_log import TableLog

    path = str(tmp_path / "events")
    EventTable(path, SCHEMA).append(_rows(0, 0))
    grown = pa.schema([*SCHEMA, ("note", pa.string())])
    EventTable(path, grown).append([dict(r, note="n") for r in _rows(1, 0)])
    EventTable(path, grown).append(_rows(2, 0))  # no second schema commit
    log = TableLog.open(path)
    assert [c["operation"] for c in log.history(10)].count("ADD COLUMNS") == 1
    rows = deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()
    assert sorted((r["writer"], r["note"]) for r in rows) == [(0, None)] * 3 + [(1, "n")] * 3 + [(2, None)] * 3
    assert EventTable(path, grown).read().num_rows == 9
    with pytest.raises(WaterlineError, match="another schema"):
        EventTable(path, SCHEMA).append(_rows(3, 0))
    not_nullable = pa.schema([*grown, pa.field("n", pa.int64(), nullable=False)])
    with pytest.raises(WaterlineError, match="another schema"):
        EventTable(path, not_nullable).append(_rows(4, 0))
