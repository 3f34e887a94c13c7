"""The `waterline` console script: one-line errors, and `plan` on the demo specs (no Spark)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FEEDS = REPO / "dags" / "feeds"


def _script() -> str:
    beside = Path(sys.executable).with_name("waterline")  # the venv running the tests
    return str(beside if beside.exists() else REPO / ".venv" / "bin" / "waterline")


def waterline(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([_script(), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def assert_one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


def spec_with(tmp_path: Path, old: str, new: str, name: str = "spec.yaml") -> Path:
    text = (FEEDS / "ticks.yaml").read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize(
    "policy, quoted",
    [
        ("event_time = WATERLINE()", "event_time = WATERLINE()"),
        ("event_time <= WATERLINE(", "event_time <= WATERLINE("),
        ("rand() < 0.5 AND event_time <= WATERLINE()", "RAND()"),
        ("NOT (event_time <= WATERLINE())", "NOT (event_time <= WATERLINE())"),
    ],
)
def test_bad_policy_is_one_line_naming_tier_and_fragment(tmp_path, policy, quoted):
    spec = spec_with(tmp_path, 'realtime: "TRUE"', f'realtime: "{policy}"')
    line = assert_one_line_error(waterline("plan", str(spec)))
    assert line.startswith(f"error: spec {spec}: tiers.realtime: ")  # the spec key at fault, as every spec error
    assert quoted in line
    assert waterline("plan", str(spec)).returncode == 2


def test_unknown_spec_key_is_named(tmp_path):
    spec = spec_with(tmp_path, "late: publish", "late: publish\ntierz: {}")
    line = assert_one_line_error(waterline("plan", str(spec)))
    assert "tierz" in line and "unknown key" in line
    assert str(spec.name) in line


def test_missing_spec_file(tmp_path):
    missing = tmp_path / "nope.yaml"
    line = assert_one_line_error(waterline("plan", str(missing)))
    assert "nope.yaml" in line and "not found" in line


def test_invalid_yaml(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("feed: x\n  bad: [\n")
    line = assert_one_line_error(waterline("plan", str(path)))
    assert "invalid YAML" in line and "line 2" in line


def test_unknown_tier_is_a_usage_error():
    proc = waterline("plan", str(FEEDS / "ticks.yaml"), "--tier", "nope")
    line = assert_one_line_error(proc)
    assert "nope" in line and "realtime" in line and "KeyError" not in line
    assert proc.returncode == 2


def test_plan_prints_branches_of_the_demo_specs():
    proc = waterline("plan", "dags/feeds/ticks.yaml")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for tier in ("realtime", "delayed_15m", "last_24h"):
        assert f"tier {tier}: " in out
    assert out.count("branch 1") == 3
    assert "start: event_time + INTERVAL '15' MINUTES  (inclusive)" in out
    assert "end: event_time + INTERVAL '1' DAY  (exclusive)" in out

    proc = waterline("plan", "dags/feeds/indicators.yaml", "--tier", "subscribers")
    assert proc.returncode == 0, proc.stderr
    assert "tier subscribers: embargo_until <= WATERLINE()" in proc.stdout
    assert "tier public" not in proc.stdout


def test_plan_json_of_the_demo_specs():
    for name, tiers in (("ticks", ["realtime", "delayed_15m", "last_24h"]), ("indicators", ["subscribers", "public"])):
        proc = waterline("plan", str(FEEDS / f"{name}.yaml"), "--json")
        assert proc.returncode == 0, proc.stderr
        plans = json.loads(proc.stdout)
        assert list(plans) == tiers
        for tier, plan in plans.items():
            assert plan["tier"] == tier and len(plan["branches"]) == 1
    public = json.loads(waterline("plan", str(FEEDS / "indicators.yaml"), "--json").stdout)["public"]
    assert public["branches"][0]["lowers"] == [{"expr": "embargo_until + INTERVAL '1' DAY", "strict": False}]
    assert public["branches"][0]["uppers"] == []


@pytest.mark.parametrize(
    "args, words",
    [
        (("--max-wait", "5m"), "--max-wait needs --wait-until-due"),
        (("--wait-until-due", "--as-of", "2026-01-01T00:00:00Z"), "exclude each other"),
        (("--wait-until-due", "--max-wait", "soon"), "soon"),
    ],
)
def test_release_wait_until_due_arguments_fail_before_spark(args, words):
    line = assert_one_line_error(waterline("release", str(FEEDS / "ticks.yaml"), *args))
    assert words in line
