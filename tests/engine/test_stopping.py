"""SIGTERM stops `waterline release --wait-until-due` within the grace, whatever its step is
doing, and the feed lease is free at once afterwards (`waterline.engine.tables.stopping`).

The run is made to hang at a boundary under the feed lease (``WATERLINE_HANG_AT``): a step
that never returns, as the endless history search of issue 53 did. Real CLI process, real
Spark, real lease file."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.engine.feedkit import far_future_clock, make_spec, spec_dict, write_partition
from tests.engine.stopkit import CLI, GRACE_S, assert_stopped_and_lease_free, start_hung, stop_and_wait, wait_for_hang
from waterline import Feed
from waterline.engine.core import faults
from waterline.engine.tables.lease import feed_lease
from waterline.engine.tables.stopping import GRACE_ENV, exit_code

pytestmark = pytest.mark.spark
TIERS = {"rt": "TRUE"}
ROWS = [{"id": i, "event_time": f"2026-01-01 10:0{i}:00", "status": "final", "v": "a"} for i in range(3)]


def test_sigterm_stops_a_hung_release_wait_until_due_and_frees_the_lease(spark, tmp_path):
    write_partition(tmp_path, "a", ROWS)
    Feed(make_spec(tmp_path, TIERS), spark=spark).ingest("a")  # due now: the release goes ahead at once
    spec_file = tmp_path / "feed.yaml"
    spec_file.write_text(yaml.safe_dump(spec_dict(tmp_path, TIERS), sort_keys=False))
    proc = start_hung(["release", str(spec_file), "--wait-until-due"], faults.RELEASE_BEFORE_MERGE)
    wait_for_hang(proc, faults.RELEASE_BEFORE_MERGE)  # under the lease, the tier not yet committed
    spec = make_spec(tmp_path, TIERS)
    assert_stopped_and_lease_free(proc, signal.SIGTERM, spec.feed_dir, spec.feed)
    # nothing was committed: the next release publishes the rows
    result = Feed(spec, spark=spark).release()
    assert result.tiers["rt"].released == len(ROWS)


def test_sigterm_while_release_waits_for_the_due_moment_stops_it_and_a_later_release_works(spark, tmp_path):
    """`release --wait-until-due` waiting on the clock (the due moment minutes ahead, no lease
    held): SIGTERM ends it within the grace with the one-line "stopped", no traceback; the
    stage it pre-armed is left for gc, and a later release publishes the rows when they are due."""
    from datetime import datetime, timedelta, timezone

    from waterline.engine.delta.stages import STAGE_DIR

    soon = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=10)  # due in ~5 minutes
    rows = [dict(r, event_time=(soon + timedelta(seconds=i)).strftime("%Y-%m-%d %H:%M:%S")) for i, r in enumerate(ROWS)]
    tiers = {"d15": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"}
    write_partition(tmp_path, "a", rows)
    spec = make_spec(tmp_path, tiers)
    Feed(spec, spark=spark).ingest("a")
    spec_file = tmp_path / "feed.yaml"
    spec_file.write_text(yaml.safe_dump(spec_dict(tmp_path, tiers), sort_keys=False))
    proc = subprocess.Popen([CLI, "release", str(spec_file), "--wait-until-due"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, **{GRACE_ENV: str(GRACE_S)}))
    stage = Path(spec.tier_path("d15"), STAGE_DIR)
    for _ in range(800):  # the run pre-stages the release at the due moment, then waits on the clock
        if any(stage.rglob("*.parquet")) or proc.poll() is not None:
            break
        time.sleep(0.5)
    assert proc.poll() is None, f"the release did not wait: {proc.communicate()}"
    time.sleep(2)  # from the stage's files into the wait
    code, err = stop_and_wait(proc, signal.SIGTERM)
    assert code == exit_code(signal.SIGTERM), f"exit {code}: {err}"
    assert not [line for line in err.splitlines() if line.startswith("Traceback")], err
    assert [line for line in err.splitlines() if line.startswith("stopped: ")] == ["stopped: stopped by SIGTERM"], err
    with feed_lease(spec.feed_dir, feed=spec.feed, timeout_s=0):  # the feed is free at once
        pass
    feed = Feed(spec, spark=spark, clock=far_future_clock())
    assert feed.read("d15").num_rows == 0  # nothing was released by the stopped run
    assert feed.release().tiers["d15"].released == len(ROWS)
