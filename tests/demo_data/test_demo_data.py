from __future__ import annotations

import csv
import json
from datetime import datetime

import pytest

from waterline import demo_data
from waterline.demo_data import (
    DEMO_DAYS,
    indicator_rows,
    ticks_rows,
    write_demo_data,
    write_indicators,
    write_ticks,
)


def test_same_seed_same_bytes(tmp_path):
    first = write_demo_data(tmp_path / "a")
    second = write_demo_data(tmp_path / "b")
    for feed in ("ticks", "indicators"):
        for a, b in zip(first[feed], second[feed]):
            assert a.read_bytes() == b.read_bytes()
    assert len(first["ticks"]) == len(DEMO_DAYS) == 3


def test_other_seed_other_data(tmp_path):
    a = write_ticks(tmp_path / "a", "2026-01-05").read_bytes()
    b = write_ticks(tmp_path / "b", "2026-01-05", seed=7).read_bytes()
    assert a != b


def test_a_day_does_not_depend_on_other_days(tmp_path):
    alone = write_ticks(tmp_path / "a", "2026-01-06").read_bytes()
    write_ticks(tmp_path / "b", "2026-01-05")
    assert write_ticks(tmp_path / "b", "2026-01-06").read_bytes() == alone


def test_ticks_shape(tmp_path):
    path = write_ticks(tmp_path, "2026-01-05")
    assert path == tmp_path / "data" / "ticks" / "2026-01-05" / "part-0.json"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert 200 <= len(rows) <= 500
    assert set(rows[0]) == {"symbol", "seq", "price", "size", "ts", "status"}
    assert len({(r["symbol"], r["seq"]) for r in rows}) == len(rows)  # unique keys
    assert {r["status"] for r in rows} == {"new"}
    stamps = [datetime.fromisoformat(r["ts"]) for r in rows]
    assert stamps == sorted(stamps)
    assert all(s.date().isoformat() == "2026-01-05" and 14 <= s.hour < 21 for s in stamps)
    assert all(r["price"] > 0 and r["size"] % 100 == 0 for r in rows)


def test_ticks_revision_corrects_and_cancels():
    base = ticks_rows("2026-01-05", 0)
    revised = ticks_rows("2026-01-05", 1)
    assert [(r["symbol"], r["seq"]) for r in base] == [(r["symbol"], r["seq"]) for r in revised]
    by_status = {s: [r for r in revised if r["status"] == s] for s in ("new", "correction", "cancel")}
    assert by_status["correction"] and by_status["cancel"]
    original = {(r["symbol"], r["seq"]): r for r in base}
    for row in by_status["correction"]:
        assert row["price"] != original[(row["symbol"], row["seq"])]["price"]
    for row in by_status["new"]:
        assert row == original[(row["symbol"], row["seq"])]


def test_rewriting_a_day_replaces_the_file(tmp_path):
    write_ticks(tmp_path, "2026-01-05", revision=1)
    path = write_ticks(tmp_path, "2026-01-05", revision=0)
    assert '"cancel"' not in path.read_text()
    assert [p.name for p in path.parent.iterdir()] == ["part-0.json"]


def test_indicators_shape(tmp_path):
    path = write_indicators(tmp_path, "2026-01-06")
    assert path == tmp_path / "data" / "indicators" / "2026-01-06" / "indicators.csv"
    rows = list(csv.DictReader(path.open()))
    assert list(rows[0]) == list(demo_data.INDICATOR_COLUMNS)
    assert len(rows) == demo_data.INDICATORS_PER_DAY
    assert {r["release_date"] for r in rows} == {"2026-01-06"}
    assert {r["revision"] for r in rows} == {"0"}
    assert len({(r["indicator"], r["period"]) for r in rows}) == len(rows)
    for row in rows:
        float(row["value"])
        assert row["period"] in ("2025-12", "2025-Q4")


def test_indicators_revision_adds_changed_values():
    base = indicator_rows("2026-01-06", 0)
    # Across the demo days some releases are revised, each with a new value.
    revised_any = False
    for day in DEMO_DAYS:
        rows = indicator_rows(day, 1)
        assert rows[: len(indicator_rows(day, 0))] == indicator_rows(day, 0)
        original = {(r["indicator"], r["period"]): r["value"] for r in rows if r["revision"] == "0"}
        for row in rows:
            if row["revision"] == "1":
                revised_any = True
                assert row["value"] != original[(row["indicator"], row["period"])]
    assert revised_any
    assert base == indicator_rows("2026-01-06", 0)


def test_bad_revision():
    with pytest.raises(ValueError):
        ticks_rows("2026-01-05", 2)
