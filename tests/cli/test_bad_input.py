"""Hostile and broken input through the real `waterline` CLI: exit code, one line, no JVM.

Argument and spec errors must be refused before any Spark start: the CLI runs with
JAVA_HOME and PATH pointing at a fake `java` that records being launched, and
`test_the_fake_java_notices_a_spark_start` shows that record does appear when a
verb does start Spark. Failures of the feed's own code (a transform meeting bad
data) are exit 2 with one line naming feed, partition and Spark's error.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.cli.test_errors import FEEDS, REPO, _script
from tests.engine.feedkit import spec_dict

TIERS = {"rt": "TRUE", "d15": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"}


@pytest.fixture()
def fake_java(tmp_path):
    """A JAVA_HOME whose `java` writes a marker file and fails: any Spark start shows."""
    home = tmp_path / "fake-jdk"
    (home / "bin").mkdir(parents=True)
    marker = tmp_path / "java-was-started"
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho \"$@\" >> '{marker}'\nexit 1\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, JAVA_HOME=str(home), PATH=f"{home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("WATERLINE_SPARK_REMOTE", None)
    return {"env": env, "marker": marker}


def run(*args: str, env=None, cwd: Path = REPO, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([_script(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def one_line(proc: subprocess.CompletedProcess, code: int = 2) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def write_spec(root: Path, tiers=None, **overrides) -> Path:
    data = spec_dict(root, tiers or TIERS, **overrides)
    data = {k: v for k, v in data.items() if v is not None}
    path = root / "feed.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_the_fake_java_notices_a_spark_start(fake_java, tmp_path):
    spec = write_spec(tmp_path)
    (tmp_path / "src" / "a").mkdir(parents=True)
    proc = run("ingest", str(spec), "--partition", "a", env=fake_java["env"])
    assert proc.returncode != 0
    assert fake_java["marker"].exists()


@pytest.mark.parametrize("args, words", [
    (("ingest", "{ticks}", "--partition", "../../escape"), "--partition"),
    (("ingest", "{ticks}", "--partition", "2020-13-45"), "2020-13-45"),
    (("backfill", "{ticks}", "--from", "2026-01-05", "--to", "nope"), "--to"),
    (("release", "{ticks}", "--as-of", "not a time"), "--as-of"),
    (("hold", "{ticks}", "--tier", "nope"), "nope"),
    (("ingest", "{missing}", "--partition", "2026-01-05"), "not found"),
    (("ingest", "{broken}", "--partition", "2026-01-05"), "invalid YAML"),
    (("gc", "{broken}"), "invalid YAML"),
])
def test_bad_arguments_and_specs_fail_before_any_jvm(fake_java, tmp_path, args, words):
    broken = tmp_path / "broken.yaml"
    broken.write_text("feed: x\n  bad: [\n")
    paths = {"ticks": str(FEEDS / "ticks.yaml"), "missing": str(tmp_path / "nope.yaml"), "broken": str(broken)}
    line = one_line(run(*[a.format(**paths) for a in args], env=fake_java["env"]))
    assert words in line
    assert not fake_java["marker"].exists(), "a JVM was started before the input was refused"


def test_a_transform_failing_on_bad_data_is_one_line_naming_feed_partition_and_spark_error(tmp_path):
    transform = "SELECT id, CAST(event_time AS TIMESTAMP) AS event_time, status, v FROM source"
    spec = write_spec(tmp_path, transform=transform, tiers={"rt": "TRUE"})
    folder = tmp_path / "src" / "a"
    folder.mkdir(parents=True)
    (folder / "part-0.json").write_text(
        '{"id": 1, "event_time": "2026-01-01 10:00:00", "status": "final", "v": "x"}\n'
        '{"id": 2, "event_time": "not a time", "status": "final", "v": "y"}\n'
    )
    line = one_line(run("ingest", str(spec), "--partition", "a"))
    assert line.startswith("error: feed f: partition a: [CAST_INVALID_INPUT]"), line
    assert "'not a time'" in line and "hint: use try_cast" in line
    assert "py4j" not in line and "Traceback" not in line


def test_plan_refuses_a_column_the_select_list_does_not_produce(tmp_path):
    spec = write_spec(tmp_path, tiers={"rt": "TRUE", "bad": "nope_column <= WATERLINE()"})
    line = one_line(run("plan", str(spec)))
    assert line.startswith(f"error: spec {spec}: tiers.bad: unknown column \"nope_column\""), line
    assert "event_time" in line  # the known columns are listed


def test_plan_says_when_it_cannot_check_columns_and_checks_them_on_a_partition(tmp_path):
    spec = write_spec(tmp_path, transform="SELECT * FROM source", tiers={"bad": "nope_column <= WATERLINE()"})
    proc = run("plan", str(spec))
    assert proc.returncode == 0, proc.stderr
    assert "columns not checked: the transform selects *" in proc.stdout
    assert "--partition KEY" in proc.stdout
    folder = tmp_path / "src" / "a"
    folder.mkdir(parents=True)
    (folder / "part-0.json").write_text('{"id": 1, "event_time": "2026-01-01 10:00:00", "status": "final"}\n')
    line = one_line(run("plan", str(spec), "--partition", "a"))
    assert "tier bad" in line and "nope_column" in line


def test_plan_checks_a_declared_schema_without_a_transform(tmp_path):
    spec = write_spec(tmp_path, transform=None, tiers={"ok": "event_time <= WATERLINE()"})
    proc = run("plan", str(spec))
    assert proc.returncode == 0, proc.stderr
    assert "columns checked against the source's declared schema" in proc.stdout


# Spec mistakes `plan` refuses from the spec alone: one line naming the key, exit 2, no JVM.
PLAN_REFUSALS = [
    ({"key": ["ident"]},
     "key[0]: column 'ident' is not in the feed's output (the transform's select list names: "
     "id, event_time, status, embargo_until, v)"),
    ({"transform": None, "event_time": "ts"},
     "event_time: column 'ts' is not in the feed's output (the source's declared schema names: "
     "id, event_time, status, embargo_until, v)"),
    ({"transform": "SELECT id, event_time, v FROM source WHERE (v > 1"},
     'transform: syntax error at line 1, column 49 near "1": Expecting ); '
     'in transform "SELECT id, event_time, v FROM source WHERE (v > 1"'),
    ({"tiers": {"rt": "TRUE", "late": "status + INTERVAL 15 MINUTES <= WATERLINE()"}},
     "tiers.late: WATERLINE() is compared with \"status + INTERVAL '15' MINUTES\", which adds an interval to "
     "column status (STRING), not to a date or TIMESTAMP: build the bound on a time column (convert it in the "
     "transform, e.g. CAST(status AS TIMESTAMP))"),
    ({"partitions": {"daily": {"start": "2026-02-30"}}},
     "partitions.daily.start: '2026-02-30' is not a real date or hour"),
    ({"tiers": {"rt": "TRUE", "quarantine": "TRUE"}},
     "tiers.quarantine: 'quarantine' names the feed's quarantine table; rename the tier"),
]


@pytest.mark.parametrize(("overrides", "reason"), PLAN_REFUSALS, ids=[r.split(":")[0] for _, r in PLAN_REFUSALS])
def test_plan_refuses_each_spec_mistake_in_one_line_before_any_jvm(fake_java, tmp_path, overrides, reason):
    spec = write_spec(tmp_path, **overrides)
    if "partitions" in overrides:  # as a person writes it: an unquoted date, which YAML cannot make a date of
        spec.write_text(spec.read_text().replace("'2026-02-30'", "2026-02-30"))
    line = one_line(run("plan", str(spec), env=fake_java["env"]))
    assert line == f"error: spec {spec}: {reason}"
    assert not fake_java["marker"].exists(), "a JVM was started before the spec was refused"


def test_status_of_a_warehouse_without_the_feed_says_so_exit_2(fake_java, tmp_path):
    spec = write_spec(tmp_path)
    (tmp_path / "wh").mkdir()
    for args in (("status", str(spec)), ("status", str(spec), "--json")):
        line = one_line(run(*args, env=fake_java["env"]))
        assert line == (f"error: feed f: no feed at {tmp_path / 'wh' / 'f'} (no held table, no tier table): nothing "
                        "was ingested yet, or the spec's warehouse is not where the feed lives")
    assert not fake_java["marker"].exists()


def test_a_feed_not_ingested_yet_has_a_status_marked_as_not_existing(tmp_path):
    """The Python face does not refuse: the Dagster sensor and the Airflow trigger poll a new feed
    before its first ingest, and must see nothing due rather than fail."""
    import waterline

    feed = waterline.load(write_spec(tmp_path))
    status = feed.status()
    assert status.exists is False and status.to_dict()["exists"] is False
    assert not status.due and all(tier.w_us is None for tier in status.tiers.values())
    assert feed.due().run_for_us is None
    assert not feed.spark_started
