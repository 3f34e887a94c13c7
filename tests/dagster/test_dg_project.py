"""The demo as a Dagster project (examples/dagster_project): the real `dg` CLI checks and lists it.

One `waterline.dagster.ReleaseFeed` per demo feed, from YAML; DESIGN's names per feed: assets
[feed, "held"] and [feed, tier], job `<feed>_release`, sensor `<feed>_release_sensor`. No Spark.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PROJECT = REPO / "examples" / "dagster_project"
BIN = Path(sys.executable).parent
FEEDS = {name: yaml.safe_load((REPO / "dags" / "feeds" / f"{name}.yaml").read_text())
         for name in ("ticks", "indicators")}


def _dg(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]), DAGSTER_DISABLE_TELEMETRY="1")
    env.pop("DAGSTER_HOME", None)
    return subprocess.run([str(BIN / "dg"), *args], cwd=str(PROJECT), env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_project_is_a_dg_project_of_release_feed_components():
    import tomllib

    config = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    assert config["tool"]["dg"]["directory_type"] == "project"
    root = config["tool"]["dg"]["project"]["root_module"]
    defs = sorted((PROJECT / root / "defs").glob("*/defs.yaml"))
    assert [p.parent.name for p in defs] == sorted(FEEDS)
    assert {yaml.safe_load(path.read_text())["type"] for path in defs} == {"waterline.dagster.ReleaseFeed"}


def test_dg_check_defs_loads_the_project():
    proc = _dg("check", "defs")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "All definitions loaded successfully" in proc.stdout + proc.stderr


def test_dg_list_defs_names_each_feeds_assets_job_and_sensor():
    proc = _dg("list", "defs", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    listed = json.loads(proc.stdout[proc.stdout.index("{"):])
    assets = {a["asset_key"] for a in listed["assets"]}
    jobs = {j["name"] for j in listed["jobs"]}
    sensors = {s["name"] for s in listed["sensors"]}
    for feed, spec in FEEDS.items():
        assert f"{feed}/held" in assets
        assert {f"{feed}/{tier}" for tier in spec["tiers"]} <= assets
        assert f"{feed}_release" in jobs and f"{feed}_ingest" in jobs
        assert f"{feed}_release_sensor" in sensors
    tiers = sum(len(spec["tiers"]) for spec in FEEDS.values())
    assert len(assets) == 2 * len(FEEDS) + tiers  # held, audit_report and the tiers: nothing else
    held = next(a for a in listed["assets"] if a["asset_key"] == "ticks/held")
    assert "waterline_demo/defs/ticks/defs.yaml" in held["source"]  # the component that built it
    assert [r["name"] for r in listed["resources"]] == ["waterline"]  # one resource for both feeds


@pytest.mark.parametrize("feed", sorted(FEEDS))
def test_the_project_reads_the_repo_demo_specs(feed):
    """The components name the repo's own spec files, so `waterline demo` data serves both."""
    document = yaml.safe_load((PROJECT / "waterline_demo" / "defs" / feed / "defs.yaml").read_text())
    spec_path = document["attributes"]["specs"].replace("{{ project_root }}", str(PROJECT))
    assert Path(spec_path).resolve() == REPO / "dags" / "feeds" / f"{feed}.yaml"
    assert (PROJECT / document["attributes"]["base_dir"]).resolve() == REPO
    assert document["attributes"]["sensor"]["default_status"] == "running"  # as `make dev`'s location
