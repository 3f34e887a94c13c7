"""The applied spec as data (issue 56, step 3): recorded in <warehouse>/<feed>/_wl_specs, shown by
`plan`, made to take effect by `apply`, and every publishing operation refusing a spec that differs.
No JVM: the tests use Feed's Spark-free methods and the real `waterline` CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from deltalake import DeltaTable

from tests.cli.test_errors import _script
from tests.engine.feedkit import make_spec, spec_dict
from waterline import Feed
from waterline.clock import FixedClock
from waterline.errors import WaterlineError
from waterline.spec.release_part import normal_policy

TIERS = {"rt": "TRUE", "d15": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"}
T0 = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z


def _feed(root: Path, tiers=TIERS, **overrides) -> Feed:
    return Feed(make_spec(root, tiers, **overrides), clock=FixedClock(T0))


def test_apply_records_each_version_and_status_refuses_until_then(tmp_path):
    first, _ = _feed(tmp_path).apply()
    assert (first.version, first.changes) == (1, "first apply")
    assert _feed(tmp_path).plan().changes == ()
    _feed(tmp_path).status()  # the applied spec: no refusal

    later = _feed(tmp_path, waterline={"mode": "event", "lateness": "30 seconds"})
    with pytest.raises(WaterlineError) as refused:
        later.status()
    line = str(refused.value)
    assert "\n" not in line and "waterline:" in line and "lateness_us" in line and "waterline apply" in line
    for operation in (later.release, lambda: later.ingest("a"), later.due):
        with pytest.raises(WaterlineError, match="differs from the applied spec .version 1."):
            operation()
    assert later.plan().changes and "not applied yet" in later.plan().describe()

    second, diff = later.apply()
    assert second.version == 2 and diff.keys_changed
    later.status()
    rows = DeltaTable(str(tmp_path / "wh" / "f" / "_wl_specs")).to_pyarrow_table().sort_by("version").to_pylist()
    assert [r["version"] for r in rows] == [1, 2]
    assert rows[0]["hash"] != rows[1]["hash"] and "waterline" in rows[1]["changes"]
    assert later.apply()[0].version == 2  # nothing to apply: the version in force, unchanged


def test_reformatting_a_policy_is_no_change(tmp_path):
    _feed(tmp_path).apply()
    reformatted = {"rt": "true", "d15": "event_time  +  interval 15 minutes <= waterline()"}
    assert normal_policy(reformatted["d15"]) == normal_policy(TIERS["d15"])
    _feed(tmp_path, reformatted).status()


def test_tiers_added_retired_and_policies_changed_are_named(tmp_path):
    _feed(tmp_path).apply()
    changed = _feed(tmp_path, {"d15": "event_time + INTERVAL 10 MINUTES <= WATERLINE()", "d20": "TRUE"})
    assert changed.plan().changes == (
        "tier d20 added", "tier rt retired",
        "tier d15: policy \"event_time + INTERVAL '15' MINUTES <= WATERLINE()\" -> "
        "\"event_time + INTERVAL '10' MINUTES <= WATERLINE()\"")
    # Before any data, tiers and policies may change: nothing is held or published yet.
    assert changed.apply()[0].version == 2


def test_retiring_a_tier_takes_effect_at_apply(tmp_path):
    _feed(tmp_path).apply()
    retired = _feed(tmp_path, {"rt": "TRUE"})
    with pytest.raises(WaterlineError, match="tier d15 retired"):
        retired.status()
    applied, diff = retired.apply()
    assert applied.version == 2 and diff.tiers_retired == ("d15",)


@pytest.mark.parametrize(("override", "named"), [
    ({"key": ["id", "event_time"]}, "key changed"),
    ({"event_time": "embargo_until", "tiers": {"rt": "TRUE"}}, "event_time changed"),
    ({"partitions": {"daily": {"start": "2026-01-01"}}}, "partitions changed"),
])
def test_apply_refuses_a_changed_identity_in_one_line(tmp_path, override, named):
    _feed(tmp_path).apply()
    tiers = override.pop("tiers", TIERS)
    changed = Feed(make_spec(tmp_path, tiers, **override), clock=FixedClock(T0))
    with pytest.raises(WaterlineError, match=f"apply refused: {named}") as refused:
        changed.apply()
    assert "\n" not in str(refused.value)


def test_the_cli_plans_and_applies(tmp_path):
    spec = tmp_path / "f.yaml"
    spec.write_text(yaml.safe_dump(spec_dict(tmp_path, TIERS)))
    run = lambda *args: subprocess.run([_script(), *args], capture_output=True, text=True, timeout=120)  # noqa: E731
    assert run("apply", str(spec)).returncode == 0
    spec.write_text(yaml.safe_dump(spec_dict(tmp_path, {"rt": "TRUE"})))
    status = run("status", str(spec))
    assert status.returncode != 0 and "tier d15 retired" in status.stderr and "waterline apply" in status.stderr
    assert len(status.stderr.strip().splitlines()) == 1
    assert "tier d15 retired" in run("plan", str(spec)).stdout
    applied = run("apply", str(spec))
    assert applied.returncode == 0 and "spec version 2 applied" in applied.stdout
    after = run("status", str(spec))  # nothing ingested yet: status says so, not the spec
    assert "nothing was ingested yet" in after.stderr and "waterline apply" not in after.stderr


def test_the_release_sensor_skips_a_tick_on_an_unapplied_spec_and_runs_once_applied(tmp_path):
    """Issue 56: the Dagster sensor says "spec not applied" instead of failing its tick."""
    from dagster import SkipReason, build_sensor_context

    from waterline.dagster.sensors import build_release_sensor

    _feed(tmp_path).apply()
    changed = make_spec(tmp_path, {**TIERS, "d15": "event_time + INTERVAL 10 MINUTES <= WATERLINE()"})
    sensor = build_release_sensor(changed, job=None, clock=FixedClock(T0))
    skipped = sensor.evaluate_tick(build_sensor_context())
    assert not skipped.run_requests
    assert skipped.skip_message.startswith("spec not applied: feed f: the spec differs from the applied spec")
    assert "waterline apply" in skipped.skip_message

    Feed(changed, clock=FixedClock(T0)).apply()
    applied = build_release_sensor(changed, job=None, clock=FixedClock(T0)).evaluate_tick(build_sensor_context())
    assert "spec not applied" not in (applied.skip_message or "")


def test_the_applied_spec_read_is_kept_until_the_table_moves(tmp_path):
    """`history` reads `_wl_specs` once per table version: a version appended by another
    process, and a table deleted and made again, are read afresh."""
    import shutil

    from waterline.engine.tables import applied_spec

    feed = _feed(tmp_path)
    feed.apply()
    first = applied_spec.history(feed.spec)
    assert applied_spec.history(feed.spec) is first  # kept: nothing moved
    retired = _feed(tmp_path, {"rt": "TRUE"})
    applied_spec._record(retired.spec, 2, T0 + 1, "by another process")  # what its apply appends
    assert [a.version for a in applied_spec.history(feed.spec)] == [1, 2]
    assert applied_spec.in_force(retired.spec) == 2
    shutil.rmtree(tmp_path / "wh" / "f" / "_wl_specs")
    assert applied_spec.history(feed.spec) == () and applied_spec.in_force(feed.spec) is None
    retired.apply()
    assert [(a.version, a.changes) for a in applied_spec.history(feed.spec)] == [(1, "first apply")]
