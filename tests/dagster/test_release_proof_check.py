"""``released_on_time``: the release proof as a Dagster asset check, run by ``<feed>_audit``.

A real feed, real Spark releases, a real (temporary) Dagster instance: releases made on time
pass; a release made with its clock an hour ahead of the trusted one fails the check of the
tier it breached, naming the row; each run proves only the commits since the last.
"""

from __future__ import annotations

import time

import pytest
from dagster import AssetCheckSeverity, AssetKey, DagsterInstance

from tests.dagster.feeds import rows, write_partition
from tests.dagster.feeds import spec as make_feed
from tests.engine.test_release_differential import _iso
from waterline import Feed
from waterline.clock import FixedClock
from waterline.dagster import definitions_from_specs

pytestmark = pytest.mark.spark

RT, EMB, REPORT = AssetKey(["f", "rt"]), AssetKey(["f", "emb"]), AssetKey(["f", "audit_report"])
HOUR_US = 3_600_000_000


def _audit(defs, instance):
    result = defs.resolve_job_def("f_audit").execute_in_process(instance=instance, raise_on_error=False)
    # the proof materializes no tier: only the audit report
    [report] = result.get_asset_materialization_events()
    assert report.asset_key == REPORT
    return {e.asset_key: e for e in result.get_asset_check_evaluations() if e.check_name == "released_on_time"}


def _report(instance):
    """The newest audit report materialization's metadata."""
    return instance.get_latest_materialization_event(REPORT).asset_materialization.metadata


def test_released_on_time_passes_on_time_releases_and_names_an_early_row(spark, tmp_path):
    spec = make_feed(tmp_path)
    defs = definitions_from_specs([spec])
    (tmp_path / "home").mkdir()
    instance = DagsterInstance.local_temp(tempdir=str(tmp_path / "home"))

    write_partition(tmp_path, "a", rows("a", 4))
    feed = Feed(spec, spark=spark)
    feed.ingest("a")
    feed.release()
    first = _audit(defs, instance)
    assert set(first) == {RT, EMB}
    assert all(e.passed for e in first.values()), [e.description for e in first.values()]
    assert first[RT].metadata["rows_released"].value == 4
    assert first[EMB].metadata["rows_released"].value == 2  # odd ids wait for 2099
    assert "proven_from" not in first[EMB].metadata  # the first run proves every retained commit
    through = first[EMB].metadata["proven_through_us"].value
    report = _report(instance)
    assert report["verdict"].value == "clean" and report["emb/breaches"].value == 0
    assert [r.data["tier"] for r in report["summary"].value.records] == ["rt", "emb"]
    assert report["emb/commits"].value >= 1 and report["emb/least_margin_seconds"].value >= 0

    # A release whose clock runs an hour ahead of the trusted one: the row embargoed until
    # half an hour from now goes out now.
    now = int(time.time() * 1_000_000)
    write_partition(tmp_path, "b", [{"id": 100, "event_time": _iso(now), "status": "final",
                                     "embargo_until": _iso(now + HOUR_US // 2), "v": "b0"}])
    ahead = Feed(spec, spark=spark, clock=FixedClock(now + HOUR_US))
    ahead.ingest("b")
    ahead.release()
    second = _audit(defs, instance)
    assert second[RT].passed  # realtime shows every row at once: nothing there is early
    emb = second[EMB]
    assert not emb.passed and emb.severity == AssetCheckSeverity.ERROR
    assert "1 row(s) released before they were due" in emb.description
    [row] = emb.metadata["breached_rows"].value
    assert row["key"] == ["b", "100"] and row["change"] == "insert"
    assert row["due_us"] == now + HOUR_US // 2 and row["committed_before_us"] < row["due_us"]
    assert emb.metadata["proven_from"].value == pytest.approx(through / 1e6)
    # the report proves the whole history: the breach, and the page that shows it
    report = _report(instance)
    assert report["verdict"].value == "BREACH" and report["emb/breaches"].value == 1
    assert report["emb/least_margin_seconds"].value < 0 and report["rt/breaches"].value == 0
    page = report["report"].value
    assert page.endswith(".html") and '<span class="verdict breach">BREACH</span>' in open(page).read()

    third = _audit(defs, instance)  # nothing committed since: the breach stays in the second run
    assert all(e.passed for e in third.values()), [e.description for e in third.values()]
    assert third[EMB].metadata["commits_proven"].value == 0
    assert _report(instance)["verdict"].value == "BREACH"  # the report keeps saying what happened
