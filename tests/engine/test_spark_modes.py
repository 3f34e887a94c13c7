"""The engine on a standalone cluster (2 workers) and over Spark Connect, on loopback.

One session-scoped `waterline.engine.cluster` start (master, 2 workers, Connect
server) serves both modes. Each mode runs in a subprocess pytest with
WATERLINE_SPARK_MASTER or WATERLINE_SPARK_REMOTE set: a classic driver and a
Connect client cannot share a process with this one's classic session (one
SparkContext per JVM; pyspark switches a whole process to Connect once a Connect
session exists). The subprocess runs the differential test (reduced: 1 example of
10 histories, 4 operations) and `test_mode_scenario.py`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.spark,
    # Off in `make test` until the cluster + Connect runs have passed together within the
    # suite's time budget on an idle machine; WATERLINE_SPARK_MODES=1 runs them.
    pytest.mark.skipif(os.environ.get("WATERLINE_SPARK_MODES", "0") == "0",
                       reason="cluster and Connect runs are opt-in: set WATERLINE_SPARK_MODES=1"),
]
ROOT = Path(__file__).resolve().parents[2]
MODULES = ["tests/engine/test_mode_scenario.py", "tests/engine/test_release_differential.py::test_engine_matches_semantics"]


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory):
    from waterline.engine import cluster

    state_dir = tmp_path_factory.mktemp("spark-cluster")
    started = time.monotonic()
    state = cluster.start(state_dir, workers=2, worker_cores=1, worker_memory="1g")
    print(f"local cluster + Connect server started in {time.monotonic() - started:.1f}s")
    yield state
    cluster.stop(state_dir)


def _run_mode(env_name: str, url: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("WATERLINE_SPARK_MASTER", "WATERLINE_SPARK_REMOTE")}
    env.update({env_name: url, "WATERLINE_ENGINE_EXAMPLES": "1", "WATERLINE_ENGINE_HISTORIES": "10",
                "WATERLINE_ENGINE_PLAN_LENGTH": "4"})
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--durations=8",
                           *MODULES], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    print(f"{env_name}={url}: {time.monotonic() - started:.1f}s")
    print("\n".join(line for line in done.stdout.splitlines() if line[:1].isdigit()))  # the slowest steps
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "skipped" not in done.stdout.splitlines()[-1], done.stdout[-2000:]


def test_engine_on_a_standalone_cluster(local_cluster):
    _run_mode("WATERLINE_SPARK_MASTER", local_cluster.master_url)


def test_engine_over_spark_connect(local_cluster):
    _run_mode("WATERLINE_SPARK_REMOTE", local_cluster.connect_url)
