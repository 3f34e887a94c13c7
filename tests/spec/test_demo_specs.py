"""The demo feed specs in dags/feeds load, validate and say what the demo needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from waterline.spec import load_spec, load_specs, spec_from_dict

REPO = Path(__file__).resolve().parents[2]
FEEDS = REPO / "dags" / "feeds"


def test_both_demo_specs_load(tmp_path):
    specs = load_specs(sorted(FEEDS.glob("*.yaml")), base_dir=REPO, overrides={"warehouse": str(tmp_path)})
    assert sorted(s.feed for s in specs) == ["indicators", "ticks"]
    for spec in specs:
        assert spec.warehouse == tmp_path
        assert spec_from_dict(spec.to_dict()) == spec
        assert spec.job_callable() is not None  # spark_jobs imports


def test_ticks_spec():
    spec = load_spec(FEEDS / "ticks.yaml", base_dir=REPO)
    assert spec.tiers == {
        "realtime": "TRUE",
        "delayed_15m": "event_time + INTERVAL 15 MINUTES <= WATERLINE()",
        "last_24h": "event_time <= WATERLINE() AND WATERLINE() < event_time + INTERVAL 1 DAY",
    }
    assert spec.key == ("symbol", "seq")
    assert spec.job == "spark_jobs.ticks:process"
    assert spec.warehouse == REPO / ".waterline" / "warehouse"
    assert spec.source_path("source", "2026-01-05") == str(REPO / ".waterline/data/ticks/2026-01-05")


def test_indicators_spec():
    spec = load_spec(FEEDS / "indicators.yaml", base_dir=REPO)
    assert list(spec.tiers) == ["subscribers", "public"]
    assert "wl_next_business_time(" in spec.transform and "'America/New_York'" in spec.transform
    assert spec.event_time == "embargo_until"
    assert spec.sources["source"].options == {"header": "true"}
    assert spec.source_path("source", "2026-01-06") == str(REPO / ".waterline/data/indicators/2026-01-06")


@pytest.mark.parametrize("name", ["ticks.yaml", "indicators.yaml"])
def test_demo_data_lands_where_the_spec_reads(tmp_path, name):
    from waterline.demo_data import indicators_path, ticks_path

    spec = load_spec(FEEDS / name, base_dir=tmp_path)
    # The specs read `.waterline/data/...`; demo_data writes `<root>/data/...`.
    where = (ticks_path if spec.feed == "ticks" else indicators_path)(tmp_path / ".waterline", "2026-01-05")
    assert where.parent == Path(spec.source_path("source", "2026-01-05"))
