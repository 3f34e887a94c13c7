"""End to end with real processes: dagster-daemon, the CLI, and (browser) dagster dev + Chromium.

A temp DAGSTER_HOME and a one-feed code location (`-f loc.py`). The release
sensor is started with `dagster sensor start`; a partition materialized from
the CLI is released by the sensor's run with no manual step; a `dagster job
backfill` over three partitions completes under the daemon and the sensor
releases the new rows. The browser test then serves the same instance with
`dagster dev` and checks the tier asset's page and its W_T metadata.
"""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest

from tests.dagster import deploy
from tests.dagster.feeds import rows, write_partition, write_spec_yaml

pytestmark = pytest.mark.heavy(4)
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"


def _rows(path: str) -> int:
    from waterline.engine.delta.table_log import TableLog

    return TableLog.open(path).row_count() or 0


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    from waterline.spec import load_spec

    root = tmp_path_factory.mktemp("e2e")
    spec_yaml = write_spec_yaml(root)
    for partition in "abc":
        write_partition(root, partition, rows(partition))
    d = deploy.prepare(root, spec_yaml)
    d["spec"] = load_spec(spec_yaml)
    return d


def _instance(d):
    from dagster import DagsterInstance

    return DagsterInstance.from_config(str(d["home"]))


@pytest.mark.e2e
def test_daemon_sensor_releases_and_job_backfill_completes(deployment):
    d, spec = deployment, deployment["spec"]
    rt = spec.tier_path("rt")
    started = deploy.cli(d, "dagster", "sensor", "start", "f_release_sensor", "-f", str(d["location"]))
    assert started.returncode == 0, started.stderr[-3000:]
    with deploy.process(d, "dagster-daemon", "run", "-f", str(d["location"]), log_name="daemon") as daemon:

        # 1. A partition materialized from the CLI; the sensor's release lands with no manual step.
        materialized = deploy.cli(
            d, "dagster", "asset", "materialize", "-f", str(d["location"]), "--select", "f/held", "--partition", "a",
        )
        assert materialized.returncode == 0, materialized.stderr[-3000:]

        # 2. Meanwhile, a job backfill over three partitions, run by the daemon's run queue.
        backfill = deploy.cli(
            d, "dagster", "job", "backfill", "-f", str(d["location"]), "-j", "f_ingest",
            "--partitions", "a,b,c", "--noprompt",
        )
        assert backfill.returncode == 0, backfill.stderr[-3000:]
        backfill_id = re.search(r"Launched backfill job `([^`]+)`", backfill.stdout).group(1)

        emb = spec.tier_path("emb")
        deploy.wait_for(  # partition a: one of its rows is embargoed until 2099
            lambda: _rows(rt) >= 2 and _rows(emb) >= 1, timeout=420,
            what=f"the sensor's release of partition a (daemon log: {deploy.log_tail(d, 'daemon', 1500)})",
        )
        assert daemon.poll() is None

        from dagster import DagsterRunStatus, RunsFilter

        instance = _instance(d)

        def backfill_done():
            runs = instance.get_runs(filters=RunsFilter(tags={"dagster/backfill": backfill_id}))
            failed = [r for r in runs if r.status in (DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED)]
            assert not failed, f"backfill run {failed[0].run_id} failed"
            statuses = sorted(r.status.value for r in runs)
            return statuses if statuses == ["SUCCESS"] * 3 else None

        deploy.wait_for(backfill_done, timeout=600, interval=2, what="the three backfill runs")
        # 3. The sensor releases what the backfill added: every row of a, b, c in rt, the due half in emb.
        deploy.wait_for(lambda: (_rows(rt), _rows(emb)) == (6, 3), timeout=420,
                        what="the sensor's release of partitions b and c")
        deploy.wait_for(lambda: all(r.is_finished for r in instance.get_runs()), timeout=420,
                        what="every run to finish")

        releases = instance.get_runs(filters=RunsFilter(job_name="f_release"))
        failed = [r.run_id for r in releases if r.status != DagsterRunStatus.SUCCESS]
        assert releases and not failed, f"release runs failed: {failed}"
        assert all(r.tags.get("dagster/sensor_name") == "f_release_sensor" for r in releases)
        keys = [r.tags.get("dagster/run_key") for r in releases]
        assert len(keys) == len(set(keys))  # one run per due moment

        # The runs' JVMs wrote their banner and log4j lines to the JVM log, not to the run
        # workers' stderr (the daemon's output here, where executors' Java stacks would
        # bury the one-line failures); each run's event log says where the JVM log is.
        daemon_log = deploy.log_tail(d, "daemon", 10**7)
        assert "Setting default log level" not in daemon_log and "incubator modules" not in daemon_log
        for run in releases + instance.get_runs(filters=RunsFilter(job_name="f_ingest")):
            messages = [e.message for e in instance.all_logs(run.run_id)]
            assert any("the JVM's own log is" in m for m in messages), messages


@pytest.mark.browser
def test_tier_asset_page_shows_w_t(deployment):
    from tests.dagster.browser import dump_dom, ensure_chromium, screenshot

    chromium, reason = ensure_chromium()
    if chromium is None:
        pytest.skip(f"no headless Chromium: {reason}")
    d = deployment
    if not _has_materialization(d):  # run alone: materialize and release once, from the CLI
        for args in (("asset", "materialize", "--select", "f/held", "--partition", "a"),
                     ("job", "execute", "-j", "f_release")):
            done = deploy.cli(d, "dagster", *args, "-f", str(d["location"]))
            assert done.returncode == 0, done.stderr[-3000:]
    port = deploy.free_port()
    base = f"http://127.0.0.1:{port}"
    with deploy.process(d, "dagster", "dev", "-f", str(d["location"]), "-h", "127.0.0.1", "-p", str(port),
                        log_name="dev"):
        deploy.wait_for(lambda: _get(f"{base}/server_info"), timeout=180,
                        what=f"dagster dev on {base} ({deploy.log_tail(d, 'dev', 1500)})")
        meta = _latest_metadata(base, ["f", "emb"])
        assert "W_T" in meta and meta["W_T"]["timestamp"] > 0, meta
        assert {"lag_seconds", "released", "updated", "removed", "expired", "held"} <= set(meta)
        _graphql(base, "mutation { setNuxSeen }")  # no first-visit community dialog over the page
        profile = d["root"] / "chromium-profile"
        url = f"{base}/assets/f/emb?view=events"  # the tier asset's latest materialization and its metadata
        shot = ARTIFACTS / "dagster-tier-asset-f-emb.png"
        screenshot(chromium, url, shot, profile)
        assert shot.stat().st_size > 10_000
        dom = dump_dom(chromium, url, profile)
        for text in ("W_T", "lag_seconds", "embargo_until", "Materialized in run"):
            assert text in dom, f"the tier asset page does not show {text!r}"


def _has_materialization(d) -> bool:
    from dagster import AssetKey

    return _instance(d).get_latest_materialization_event(AssetKey(["f", "emb"])) is not None


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.read().decode()
    except OSError:
        return None


QUERY = """
query ($key: AssetKeyInput!) {
  assetOrError(assetKey: $key) {
    ... on Asset {
      assetMaterializations(limit: 1) {
        metadataEntries {
          label
          ... on TimestampMetadataEntry { timestamp }
          ... on IntMetadataEntry { intValue }
          ... on FloatMetadataEntry { floatValue }
          ... on BoolMetadataEntry { boolValue }
        }
      }
    }
  }
}
"""


def _graphql(base: str, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"{base}/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as resp:
        data = json.loads(resp.read())
    assert not data.get("errors"), data["errors"]
    return data["data"]


def _latest_metadata(base: str, path: list[str]) -> dict:
    data = _graphql(base, QUERY, {"key": {"path": path}})
    (materialization,) = data["assetOrError"]["assetMaterializations"]
    return {e["label"]: e for e in materialization["metadataEntries"]}
