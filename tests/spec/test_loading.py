from __future__ import annotations

from datetime import timedelta

import pytest
import yaml

from waterline.errors import WaterlineError
from waterline.spec import FeedSpec, SpecError, deep_merge, load_spec, load_specs, spec_from_dict


def test_minimal_defaults(minimal, tmp_path):
    spec = spec_from_dict(minimal, base_dir=tmp_path)
    assert isinstance(spec, FeedSpec)
    assert spec.warehouse == tmp_path / "wh"
    assert list(spec.sources) == ["source"]
    assert spec.sources["source"].format == "json"
    assert spec.timezone == "UTC"
    assert spec.waterline.mode == "clock"
    assert spec.late == "publish"
    assert spec.release_interval_seconds == 30
    assert spec.transform is None and spec.job is None and spec.description is None
    assert list(spec.tiers) == ["realtime", "delayed_15m"]
    assert spec.key == ("symbol", "seq")


def test_spec_error_is_a_waterline_error():
    assert issubclass(SpecError, WaterlineError)


def test_paths(minimal, tmp_path):
    spec = spec_from_dict(minimal, base_dir=tmp_path)
    assert spec.feed_dir == str(tmp_path / "wh" / "ticks")
    assert spec.held_path == str(tmp_path / "wh" / "ticks" / "held")
    assert spec.quarantine_path == str(tmp_path / "wh" / "ticks" / "quarantine")
    assert spec.tier_path("delayed_15m") == str(tmp_path / "wh" / "ticks" / "tiers" / "delayed_15m")
    assert spec.source_path("source", "2026-01-02") == str(tmp_path / "data" / "ticks" / "2026-01-02")


def test_absolute_and_uri_paths_are_kept(minimal, tmp_path):
    minimal["warehouse"] = str(tmp_path / "abs")
    minimal["source"]["path"] = "s3a://bucket/ticks/{partition}/"
    spec = spec_from_dict(minimal, base_dir="/elsewhere")
    assert spec.warehouse == tmp_path / "abs"
    assert spec.source_path("source", "2026-01-02") == "s3a://bucket/ticks/2026-01-02/"


def test_s3_warehouse_is_kept_as_written(minimal):
    minimal["warehouse"] = "s3a://bucket/prefix/wh/"
    spec = spec_from_dict(minimal, base_dir="/elsewhere")
    assert spec.warehouse == "s3a://bucket/prefix/wh"
    assert spec.feed_dir == "s3a://bucket/prefix/wh/ticks"
    assert spec.held_path == "s3a://bucket/prefix/wh/ticks/held"
    assert spec.quarantine_path == "s3a://bucket/prefix/wh/ticks/quarantine"
    assert spec.tier_path(next(iter(spec.tiers))) == f"s3a://bucket/prefix/wh/ticks/tiers/{next(iter(spec.tiers))}"
    assert spec_from_dict(spec.to_dict()) == spec


def test_base_dir_defaults_to_cwd(minimal, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert spec_from_dict(minimal).warehouse == tmp_path / "wh"


def test_full_round_trip(tmp_path):
    data = {
        "feed": "trades",
        "description": "two venues",
        "warehouse": "wh",
        "sources": {
            "nyse": {"format": "csv", "path": "in/nyse/{date}/{hour}", "options": {"header": True, "sep": ";"}},
            "nasdaq": {"format": "parquet", "path": "in/nasdaq/{date}/{hour}"},
        },
        "partitions": {"hourly": {"start": "2026-01-01-00:00", "end": "2026-01-02 05:00"}},
        "transform": "SELECT * FROM source WHERE id IS NOT NULL\n",
        "job": "spark_jobs.ticks:process",
        "key": ["venue", "id"],
        "event_time": "ts",
        "timezone": "America/New_York",
        "waterline": {"mode": "event", "lateness": "30 seconds", "idle_after": "10 minutes"},
        "tiers": {"realtime": True, "late_ok": "ts + INTERVAL 1 HOUR <= WATERLINE()"},
        "late": "quarantine",
        "release_interval_seconds": 5,
    }
    spec = spec_from_dict(data, base_dir=tmp_path)
    assert spec.sources["nyse"].options == {"header": "true", "sep": ";"}
    assert spec.partitions.end == "2026-01-02-05:00"
    assert spec.waterline.lateness == timedelta(seconds=30)
    assert spec.waterline.lateness_us == 30_000_000
    assert spec.waterline.idle_after_us == 600_000_000
    assert spec.tiers["realtime"] == "TRUE"
    assert spec.views == {"nyse": ("nyse",), "nasdaq": ("nasdaq",), "source": ("nyse", "nasdaq")}
    assert spec.source_path("nasdaq", "2026-01-01-13:00") == str(tmp_path / "in/nasdaq/2026-01-01/13")
    again = spec_from_dict(spec.to_dict(), base_dir="/somewhere/else")
    assert again == spec
    assert again.to_dict() == spec.to_dict()
    # to_dict is plain data: it survives YAML.
    assert spec_from_dict(yaml.safe_load(yaml.safe_dump(spec.to_dict()))) == spec


def test_one_named_source_is_also_the_source_view(minimal):
    assert spec_from_dict(minimal).views == {"source": ("source",)}
    del minimal["source"]
    minimal["sources"] = {"nyse": {"format": "json", "path": "/x/{partition}"}}
    spec = spec_from_dict(minimal)
    assert spec.views == {"nyse": ("nyse",), "source": ("nyse",)}
    assert spec_from_dict(spec.to_dict()) == spec


def test_load_spec_with_overrides(tmp_path, minimal):
    path = tmp_path / "feeds" / "ticks.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(minimal))
    spec = load_spec(path, base_dir=tmp_path, overrides={"warehouse": str(tmp_path / "w2"), "waterline": {"mode": "clock"}})
    assert spec.warehouse == tmp_path / "w2"
    assert spec.spec_file == str(path)
    assert spec.source_path("source", "2026-01-05").startswith(str(tmp_path / "data"))


def test_yaml_dates_and_unquoted_true(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text(
        "feed: f\nwarehouse: w\nsource: {format: delta, path: tables/f}\n"
        "partitions: {daily: {start: 2026-01-01, end: 2026-01-03}}\n"
        "key: id\nevent_time: ts\ntiers: {all: TRUE}\n"
    )
    spec = load_spec(path, base_dir=tmp_path)
    assert spec.partitions.start == "2026-01-01" and spec.partitions.end == "2026-01-03"
    assert spec.key == ("id",)
    assert spec.tiers == {"all": "TRUE"}
    # A delta source without a placeholder is read whole for every partition.
    assert spec.source_path("source", "2026-01-02") == str(tmp_path / "tables/f")


def test_deep_merge_nested_and_delete():
    base = {"a": {"b": 1, "c": 2}, "d": 3}
    merged = deep_merge(base, {"a": {"c": 20, "e": 5}, "d": None})
    assert merged == {"a": {"b": 1, "c": 20, "e": 5}}
    assert base == {"a": {"b": 1, "c": 2}, "d": 3}


def test_load_specs_rejects_duplicate_feeds(tmp_path, minimal):
    paths = []
    for name in ("a.yaml", "b.yaml"):
        paths.append(tmp_path / name)
        paths[-1].write_text(yaml.safe_dump(minimal))
    assert [s.feed for s in load_specs(paths[:1])] == ["ticks"]
    with pytest.raises(SpecError, match=r"^spec .*b\.yaml: feed: 'ticks' is already defined by .*a\.yaml$"):
        load_specs(paths)


def test_job_callable(minimal):
    minimal["job"] = "waterline.spec.loader:deep_merge"
    assert spec_from_dict(minimal).job_callable() is deep_merge
    minimal["job"] = "waterline.spec.loader:nope"
    with pytest.raises(SpecError, match=r"^spec ticks: job: module 'waterline.spec.loader' has no function 'nope'$"):
        spec_from_dict(minimal).job_callable()
    minimal["job"] = "no_such_module_xyz:run"
    with pytest.raises(SpecError, match=r"^spec ticks: job: cannot import module 'no_such_module_xyz'"):
        spec_from_dict(minimal).job_callable()


def test_unknown_tier_and_source_in_path_helpers(minimal):
    spec = spec_from_dict(minimal)
    with pytest.raises(SpecError, match=r"^spec ticks: tiers.nope: no such tier \(tiers: realtime, delayed_15m\)$"):
        spec.tier_path("nope")
    with pytest.raises(SpecError, match=r"^spec ticks: sources.nope: no such source"):
        spec.source_path("nope", "2026-01-01")
    with pytest.raises(SpecError, match=r"^spec ticks: partition 2025-12-31: before the first partition 2026-01-01$"):
        spec.source_path("source", "2025-12-31")


def test_job_module_is_found_in_base_dir(minimal, tmp_path, monkeypatch):
    (tmp_path / "my_feed_jobs_xyz.py").write_text("def run(spark, df, partition):\n    return df\n")
    monkeypatch.setattr("sys.path", [p for p in __import__("sys").path if p not in ("", ".", str(tmp_path))])
    minimal["job"] = "my_feed_jobs_xyz:run"
    assert spec_from_dict(minimal, base_dir=tmp_path).job_callable().__name__ == "run"
