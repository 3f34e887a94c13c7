"""The demo feeds' Spark steps on tiny data."""

from __future__ import annotations

import datetime as dt

import pytest

from waterline.demo_data import ticks_rows, write_ticks

pytestmark = pytest.mark.spark


def test_ticks_process_drops_cancels_and_types(spark):
    from spark_jobs.ticks import process

    df = spark.createDataFrame(
        [
            ("AAPL", 1, 10.5, 100, "2026-01-05T14:30:00.250", "new"),
            ("AAPL", 2, 11.0, 200, "2026-01-05T14:31:00.000", "correction"),
            ("MSFT", 1, 20.0, 300, "2026-01-05T14:32:00.000", "cancel"),
        ],
        "symbol STRING, seq BIGINT, price DOUBLE, size BIGINT, ts STRING, status STRING",
    )
    out = process(spark, df, "2026-01-05")
    assert dict(out.dtypes)["event_time"] == "timestamp"
    rows = sorted(out.collect())
    assert [(r.symbol, r.seq, r.notional, r.status) for r in rows] == [
        ("AAPL", 1, 1050.0, "new"),
        ("AAPL", 2, 2200.0, "correction"),
    ]
    assert rows[0].event_time == dt.datetime(2026, 1, 5, 14, 30, 0, 250000)  # session time zone is UTC


def test_indicators_keeps_latest_revision(spark):
    from spark_jobs.indicators import process

    rows = [
        ("CPI", "2025-12", "2.9", "percent", "2026-01-06", "0", "x"),
        ("CPI", "2025-12", "3.0", "percent", "2026-01-06", "1", "x"),
        ("GDP", "2025-Q4", "2.5", "percent", "2026-01-06", "0", "y"),
    ]
    df = spark.createDataFrame(rows, "indicator STRING, period STRING, value STRING, unit STRING, release_date STRING, revision STRING, extra STRING")
    out = process(spark, df, "2026-01-06")
    types = dict(out.dtypes)
    assert (types["value"], types["revision"], types["release_date"]) == ("double", "int", "date")
    got = sorted((r.indicator, r.value, r.revision, r.release_date, r.extra) for r in out.collect())
    assert got == [("CPI", 3.0, 1, dt.date(2026, 1, 6), "x"), ("GDP", 2.5, 0, dt.date(2026, 1, 6), "y")]


def test_ticks_entry_point_on_a_revised_day(spark, tmp_path, capsys):
    # The `python -m spark_jobs.ticks` entry point, run in-process so it reuses the test JVM.
    from spark_jobs._cli import run
    from spark_jobs.ticks import process, read_source

    rows = ticks_rows("2026-01-05", 1, rows=40)
    live = sum(r["status"] != "cancel" for r in rows)
    assert live < 40
    path = write_ticks(tmp_path, "2026-01-05", revision=1, rows=40).parent
    assert run("ticks", read_source, process, [str(path)]) == 0
    out, err = capsys.readouterr()
    assert "notional" in out and "event_time" in out and "cancel" not in out
    assert f"{live} rows (partition 2026-01-05)" in err
