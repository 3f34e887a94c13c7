"""SIGTERM stops `waterline release --wait-until-due` within the grace, whatever its step is
doing, and the feed lease is free at once afterwards (`waterline.engine.log.stopping`).

The run is made to hang at a boundary under the feed lease (``WATERLINE_HANG_AT``): a step
that never returns, as the endless history search of issue 53 did. Real CLI process, real
Spark, real lease file."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import yaml

from tests.engine.feedkit import make_spec, spec_dict, write_partition
from tests.engine.stopkit import assert_stopped_and_lease_free, start_hung, wait_for_hang
from waterline import Feed
from waterline.engine.core import faults

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
