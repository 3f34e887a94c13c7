"""A killed Airflow task ends within the stop grace, its feed lease given back: Airflow calls the
operator's ``on_kill`` (then raises in the task's thread), which arms the same watchdog as
`waterline stream` and `waterline release` (`waterline.engine.tables.stopping`). Here the task's
step never returns, as a stuck one would not: the watchdog alone ends the process. No JVM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.airflow.home import REPO
from tests.engine.feedkit import make_spec
from waterline.engine.tables.lease import feed_lease, store_for
from waterline.engine.tables.stopping import GRACE_ENV, STOP_GRACE_S, exit_code

TASK = textwrap.dedent("""
    import sys, time
    from tests.engine.feedkit import make_spec
    from waterline.airflow.operators import WaterlineReleaseOperator
    from waterline.engine.tables.lease import feed_lease
    from pathlib import Path

    spec = make_spec(Path(sys.argv[1]), {"rt": "TRUE"})
    task = WaterlineReleaseOperator(task_id="release", spec=spec, deferrable=False)
    with feed_lease(spec.feed_dir, feed=spec.feed):
        print("holding", flush=True)
        task.on_kill()  # what Airflow's SIGTERM handler calls first
        while True:  # a step that never returns
            time.sleep(60)
""")


def test_on_kill_ends_a_stuck_task_within_the_grace_and_gives_the_lease_back(tmp_path):
    spec = make_spec(tmp_path, {"rt": "TRUE"})
    env = dict(os.environ, **{GRACE_ENV: "2"}, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", TASK, str(tmp_path)], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=STOP_GRACE_S)  # the documented grace bounds it
    assert "holding" in out, err
    assert proc.returncode == exit_code(15), err
    assert "1 feed lease(s) given back" in err, err
    body, _ = store_for(spec.feed_dir).read()
    assert json.loads(body)["expires_at"] == 0.0
    with feed_lease(spec.feed_dir, feed=spec.feed, timeout_s=0):
        pass
