"""The ReleaseFeed Component: registered for `dg`, scaffolded into a dg project, loaded.

No Spark: building definitions starts no JVM.
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
BIN = Path(sys.executable).parent
TICKS = REPO / "dags" / "feeds" / "ticks.yaml"

PYPROJECT = """\
[project]
name = "wl_dg_proj"
version = "0.1.0"
requires-python = ">=3.11"

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "wl_dg_proj"
registry_modules = ["waterline.*"]
"""


def _dg(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]), DAGSTER_DISABLE_TELEMETRY="1")
    env.pop("DAGSTER_HOME", None)
    return subprocess.run([str(BIN / "dg"), *args], cwd=str(cwd), env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    (root / "src" / "wl_dg_proj" / "defs").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "src" / "wl_dg_proj" / "__init__.py").write_text("")
    (root / "src" / "wl_dg_proj" / "defs" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(root / "src"))
    yield root
    for name in [m for m in sys.modules if m == "wl_dg_proj" or m.startswith("wl_dg_proj.")]:
        del sys.modules[name]


def _summary(defs) -> dict:
    repo = defs.get_repository_def()
    graph = repo.asset_graph
    assets = {}
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        partitions = node.partitions_def
        assets[key.to_user_string()] = {
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "partitions": None if partitions is None else type(partitions).__name__,
            "first": None if partitions is None else partitions.get_first_partition_key(),
            "group": node.group_name,
        }
    return {
        "assets": assets,
        "checks": sorted(f"{k.asset_key.to_user_string()}:{k.name}" for k in graph.asset_check_keys),
        "jobs": sorted(j.name for j in repo.get_all_jobs() if not j.name.startswith("__")),
        "sensors": sorted((s.name, s.minimum_interval_seconds) for s in repo.sensor_defs),
        "schedules": sorted((s.name, s.cron_schedule) for s in repo.schedule_defs),
    }


def test_dg_lists_the_component(tmp_path):
    proc = _dg("list", "components", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    items = json.loads(proc.stdout[proc.stdout.index("{"):])["items"]
    assert "waterline.dagster.ReleaseFeed" in [i["key"] for i in items]


def test_scaffolded_component_builds_the_spec_definitions(project):
    import dagster as dg

    from waterline.dagster import ReleaseFeed, definitions_from_specs
    from waterline.spec import load_spec

    proc = _dg("scaffold", "defs", "waterline.dagster.ReleaseFeed", "ticks_feed", "--spec", str(TICKS), cwd=project)
    assert proc.returncode == 0, proc.stderr[-2000:]
    defs_yaml = project / "src" / "wl_dg_proj" / "defs" / "ticks_feed" / "defs.yaml"
    document = yaml.safe_load(defs_yaml.read_text())
    assert document["type"] == "waterline.dagster.ReleaseFeed"
    assert document["attributes"] == yaml.safe_load(TICKS.read_text())  # the attributes are the spec

    loaded = dg.load_from_defs_folder(path_within_project=project)
    expected = definitions_from_specs([load_spec(TICKS, base_dir=project)])
    assert _summary(loaded) == _summary(expected)
    summary = _summary(loaded)
    assert summary["assets"]["ticks/held"]["partitions"] == "DailyPartitionsDefinition"
    assert summary["assets"]["ticks/held"]["first"] == "2026-01-05"
    assert summary["assets"]["ticks/delayed_15m"]["deps"] == ["ticks/held"]
    assert summary["jobs"] == ["ticks_apply", "ticks_audit", "ticks_ingest", "ticks_maintain", "ticks_release"]
    assert summary["sensors"] == [("ticks_release_sensor", 30)]
    assert summary["schedules"] == [("ticks_audit_schedule", "0 * * * *"), ("ticks_maintain_schedule", "0 * * * *")]
    assert "ticks/delayed_15m:released_on_time" in summary["checks"]

    component = ReleaseFeed.from_attributes_dict(attributes=document["attributes"])
    assert component.feed_spec(base_dir=project) == load_spec(TICKS, base_dir=project)


def test_starter_scaffold_is_a_valid_feed(project):
    import dagster as dg

    proc = _dg("scaffold", "defs", "waterline.dagster.ReleaseFeed", "orders", cwd=project)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = _summary(dg.load_from_defs_folder(path_within_project=project))
    assert sorted(summary["assets"]) == ["orders/audit_report", "orders/delayed_15m", "orders/held", "orders/realtime"]
    assert summary["sensors"] == [("orders_release_sensor", 30)]


@pytest.mark.parametrize(("patch", "expected"), [
    ({"partitions": {"weekly": {"start": "2026-01-05"}}}, "defs.yaml: partitions.weekly: unknown key"),
    # refused by the spec loader, as for every other adapter (dg's YAML keeps an impossible date as text)
    ({"partitions": {"daily": {"start": "2026-02-30"}}},
     "defs.yaml: partitions.daily.start: '2026-02-30' is not a real date or hour"),
    ({"tiers": {"held": "TRUE"}}, "defs.yaml: tiers.held: 'held' names the feed's held table"),
])
def test_bad_attributes_fail_with_the_spec_error(project, patch, expected):
    import dagster as dg

    folder = project / "src" / "wl_dg_proj" / "defs" / "bad"
    folder.mkdir()
    attributes = yaml.safe_load(TICKS.read_text())
    attributes.update(patch)
    text = yaml.safe_dump({"type": "waterline.dagster.ReleaseFeed", "attributes": attributes})
    (folder / "defs.yaml").write_text(text.replace("'2026-02-30'", "2026-02-30"))  # unquoted, as a person writes it
    with pytest.raises(Exception) as info:
        dg.load_from_defs_folder(path_within_project=project)
    from waterline.spec import SpecError

    cause = info.value
    while cause is not None and not isinstance(cause, SpecError):
        cause = cause.__cause__ or cause.__context__
    assert cause is not None, info.value
    assert str(cause).startswith("spec ") and expected in str(cause), str(cause)


def test_a_component_subclass_brings_its_own_translator(project):
    """The translator hook of the Component: a subclass's `get_translator` shapes the asset
    specs, as `definitions_from_specs(translator=)` does."""
    import dagster as dg

    package = project / "src" / "wl_dg_proj"
    (package / "grouped.py").write_text(
        "from waterline.dagster import ReleaseFeed, WaterlineTranslator\n\n\n"
        "class Grouped(WaterlineTranslator):\n"
        "    def get_group_name(self, spec):\n"
        "        return 'market_data'\n\n\n"
        "class GroupedFeed(ReleaseFeed):\n"
        "    def get_translator(self):\n"
        "        return Grouped()\n"
    )
    folder = package / "defs" / "ticks_grouped"
    folder.mkdir()
    attributes = yaml.safe_load(TICKS.read_text())
    (folder / "defs.yaml").write_text(yaml.safe_dump({"type": "wl_dg_proj.grouped.GroupedFeed", "attributes": attributes}))
    summary = _summary(dg.load_from_defs_folder(path_within_project=project))
    assert {a["group"] for a in summary["assets"].values()} == {"market_data"}
    assert summary["jobs"] == ["ticks_apply", "ticks_audit", "ticks_ingest", "ticks_maintain", "ticks_release"]


FEED_DEFS = """\
type: waterline.dagster.ReleaseFeed
attributes:
  specs: [ticks.yaml]
  translation:
    key_prefix: market
    group_name: "{{ feed }}_tiers"
    tags: {team: "data", table: "{{ table }}"}
  resource: {spark_remote: "sc://spark-connect:15002", transient_retries: 5}
  sensor: {minimum_interval_seconds: 7, default_status: running}
"""


def test_spec_files_translation_resource_and_sensor_from_yaml(project, monkeypatch):
    """`specs` names a spec file beside defs.yaml; `translation` prefixes every key (a tier's
    dependency and checks follow the held asset's new key), `resource` and `sensor` configure
    the run's resource and the release sensor. Job and sensor names keep the feed's name."""
    import dagster as dg

    monkeypatch.delenv("WATERLINE_SPARK_MASTER", raising=False)
    monkeypatch.delenv("WATERLINE_SPARK_REMOTE", raising=False)
    folder = project / "src" / "wl_dg_proj" / "defs" / "market"
    folder.mkdir()
    (folder / "ticks.yaml").write_text(TICKS.read_text())
    (folder / "defs.yaml").write_text(FEED_DEFS)
    defs = dg.load_from_defs_folder(path_within_project=project)
    summary = _summary(defs)
    tiers = yaml.safe_load(TICKS.read_text())["tiers"]
    assert sorted(summary["assets"]) == sorted(
        ["market/ticks/held", "market/ticks/audit_report"] + [f"market/ticks/{t}" for t in tiers])
    assert {a["group"] for a in summary["assets"].values()} == {"ticks_tiers"}
    assert summary["assets"]["market/ticks/delayed_15m"]["deps"] == ["market/ticks/held"]
    assert "market/ticks/delayed_15m:embargo_safety" in summary["checks"]
    assert "market/ticks/held:quarantine_empty" in summary["checks"]
    assert summary["jobs"] == ["ticks_apply", "ticks_audit", "ticks_ingest", "ticks_maintain", "ticks_release"]
    assert summary["sensors"] == [("ticks_release_sensor", 7)]

    repo = defs.get_repository_def()
    graph = repo.asset_graph
    spec = graph.get(dg.AssetKey(["market", "ticks", "delayed_15m"]))
    assert spec.tags["team"] == "data" and spec.tags["table"] == "delayed_15m"
    assert spec.tags["waterline/feed"] == "ticks"  # merged with the translator's own tags
    release = repo.get_job("ticks_release")
    assert {k.to_user_string() for k in release.asset_layer.selected_asset_keys} == {
        f"market/ticks/{t}" for t in tiers}
    assert repo.get_sensor_def("ticks_release_sensor").default_status == dg.DefaultSensorStatus.RUNNING
    assert all(s.default_status == dg.DefaultScheduleStatus.RUNNING for s in repo.schedule_defs)
    resource = defs.resources["waterline"]
    assert (resource.spark_remote, resource.spark_master, resource.transient_retries) == (
        "sc://spark-connect:15002", None, 5)


@pytest.mark.parametrize(("attributes", "expected"), [
    ({"specs": ["ticks.yaml"], "feed": "ticks"}, "specs: give spec files or the spec's keys, not both"),
    ({"sensor": {"default_status": "running"}}, "specs: give spec files (`specs:`) or the spec's keys"),
    ({"specs": ["missing.yaml"]}, "missing.yaml: file not found"),
])
def test_spec_files_or_keys_one_line_errors(project, attributes, expected):
    import dagster as dg

    from waterline.spec import SpecError

    folder = project / "src" / "wl_dg_proj" / "defs" / "either"
    folder.mkdir()
    (folder / "ticks.yaml").write_text(TICKS.read_text())
    document = {"type": "waterline.dagster.ReleaseFeed", "attributes": attributes}
    (folder / "defs.yaml").write_text(yaml.safe_dump(document))
    with pytest.raises(Exception) as info:
        dg.load_from_defs_folder(path_within_project=project)
    cause = info.value
    while cause is not None and not isinstance(cause, SpecError):
        cause = cause.__cause__ or cause.__context__
    assert cause is not None, info.value
    assert expected in str(cause) and "\n" not in str(cause), str(cause)
