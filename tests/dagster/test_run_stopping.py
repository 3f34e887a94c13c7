"""A Dagster run terminated with SIGTERM while its release step is under the feed lease ends
within the documented grace and gives the lease back (issue 53), as the CLI's runs do.

Real `dagster asset materialize` process (in-process executor, the definitions' default) over
`definitions_from_specs`, real Spark, real lease file. The step is made to hang under the lease
(``WATERLINE_HANG_AT``): a step that never returns."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.engine.feedkit import make_spec, spec_dict, write_partition
from tests.engine.stopkit import GRACE_S, stop_and_wait, wait_for_hang
from waterline import Feed
from waterline.engine.core import faults
from waterline.engine.tables.lease import feed_lease, store_for
from waterline.engine.tables.stopping import GRACE_ENV

pytestmark = pytest.mark.spark
DAGSTER = str(Path(sys.executable).with_name("dagster"))
TIERS = {"rt": "TRUE"}
ROWS = [{"id": i, "event_time": f"2026-01-01 10:0{i}:00", "status": "final", "v": "a"} for i in range(3)]


def test_sigterm_to_a_dagster_run_hung_in_its_release_frees_the_lease_within_the_grace(spark, tmp_path):
    write_partition(tmp_path, "a", ROWS)
    spec = make_spec(tmp_path, TIERS)
    Feed(spec, spark=spark).ingest("a")
    spec_file = tmp_path / "feed.yaml"
    spec_file.write_text(yaml.safe_dump(spec_dict(tmp_path, TIERS), sort_keys=False))
    defs = tmp_path / "defs.py"
    defs.write_text("from waterline.dagster import definitions_from_specs\n"
                    f"defs = definitions_from_specs([{str(spec_file)!r}])\n")
    home = tmp_path / "dagster_home"
    home.mkdir()
    env = dict(os.environ, DAGSTER_HOME=str(home), **{faults.HANG_ENV: faults.RELEASE_BEFORE_MERGE,
                                                       GRACE_ENV: str(GRACE_S)})
    proc = subprocess.Popen([DAGSTER, "asset", "materialize", "-f", str(defs), "--select", f"{spec.feed}/rt"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    wait_for_hang(proc, faults.RELEASE_BEFORE_MERGE)  # under the lease, the tier not yet committed
    code, err = stop_and_wait(proc, signal.SIGTERM)  # ends within the documented grace
    assert code != 0, err  # the run did not succeed
    body, _ = store_for(spec.feed_dir).read()
    assert json.loads(body)["expires_at"] == 0.0, f"the lease was not given back: {body!r}\n{err}"
    with feed_lease(spec.feed_dir, feed=spec.feed, timeout_s=0):
        pass
    # nothing was committed by the stopped run: the next release publishes the rows
    assert Feed(spec, spark=spark).release().tiers["rt"].released == len(ROWS)
