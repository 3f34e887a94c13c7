"""The engine on a standalone cluster (2 workers) and over Spark Connect, on loopback.

One `waterline.local.cluster` start (master, 2 workers, Connect server) serves
both modes. Each mode runs in a subprocess pytest with
WATERLINE_SPARK_MASTER or WATERLINE_SPARK_REMOTE set: a classic driver and a
Connect client cannot share a process with this one's classic session (one
SparkContext per JVM; pyspark switches a whole process to Connect once a Connect
session exists). The subprocess runs the differential test (reduced: 1 example of
10 histories, 4 operations), `test_mode_scenario.py` and a stream drain (over Connect also
a long-running `waterline stream`, whose client learns each batch the server's worker
committed and releases the real-time tier itself).

Over Connect, Spark's code generation is on, as users run it (the rest of the suite runs SQL
interpreted: tests/jvm.py); so the compiled path is compared with `waterline.semantics` on
every run. The cluster run evaluates SQL interpreted, as the rest of the suite: what it adds
is executors in other JVMs, and compiling each query on two executors made its story 45%
slower (204 s against 140 s, 456 against 322 machine core-seconds, stop 51).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.jvm import compiled_env, long_lived_jvm

pytestmark = [
    pytest.mark.spark,
    pytest.mark.heavy(14),
    pytest.mark.skipif(os.environ.get("WATERLINE_SPARK_MODES", "1") == "0",
                       reason="WATERLINE_SPARK_MODES=0: cluster and Connect runs switched off"),
]
ROOT = Path(__file__).resolve().parents[2]
MODULES = ["tests/engine/test_mode_scenario.py", "tests/engine/test_release_differential.py::test_engine_matches_semantics"]
MODES = {"cluster": "WATERLINE_SPARK_MASTER", "connect": "WATERLINE_SPARK_REMOTE"}
# A Kafka topic drained into held and released; the subprocess starts its own broker.
DRAIN = "tests/streams/test_stream_ingest.py::test_a_drained_topic_collapses_revisions_tombstones_and_moves_and_" \
        "releases_the_realtime_tier"
MODE_ONLY = {
    # foreachBatch runs on the cluster's driver, so the collected batch ([default]) is local
    # mode's code; the one pass ([spark-jobs]) writes from the executors.
    "cluster": [f"{DRAIN}[spark-jobs]"],
    # Both ways in the server's Python worker, and a running stream: the client follows the
    # server's commits; a running stream's warm-up is the client's plan, run by the server.
    "connect": [DRAIN, "tests/streams/test_stream_cli.py::test_a_running_stream_makes_records_readable_and_stops_"
                "cleanly_on_sigterm",
                "tests/streams/test_stream_ingest.py::test_a_warm_up_runs_copies_of_the_topics_records_through_a_"
                "batch_and_writes_nothing"],
}
COMPILED = {"connect"}  # the modes whose sessions compile their queries


def _run_mode(mode: str, url: str) -> str | None:
    """Run MODULES (and the mode's own) against ``url`` in a subprocess; the failure report, or
    None when all passed."""
    env = {k: v for k, v in os.environ.items() if k not in MODES.values()}
    if mode in COMPILED:
        env = compiled_env(env)
    env_name = MODES[mode]
    env.update({env_name: url, "WATERLINE_ENGINE_EXAMPLES": "1", "WATERLINE_ENGINE_HISTORIES": "10",
                "WATERLINE_ENGINE_PLAN_LENGTH": "4"})
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--durations=8", *MODULES, *MODE_ONLY.get(mode, [])],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    print(f"{env_name}={url}: {time.monotonic() - started:.1f}s")
    print("\n".join(line for line in done.stdout.splitlines() if line[:1].isdigit()))  # the slowest steps
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode != 0 or " passed" not in last or "skipped" in last:
        return done.stdout[-6000:] + done.stderr[-2000:]
    return None


def test_engine_on_a_standalone_cluster_and_over_spark_connect(tmp_path_factory):
    """One start of master + 2 workers + Connect server (one test: a test-parallel run must not
    start two), then each mode in turn; both run even if the first fails."""
    from waterline.local import cluster

    state_dir = tmp_path_factory.mktemp("spark-cluster")
    started = time.monotonic()
    with long_lived_jvm(codegen=True):  # long-lived JVMs; the Connect server compiles its queries
        state = cluster.start(state_dir, workers=2, worker_cores=1, worker_memory="1g")
    print(f"local cluster + Connect server started in {time.monotonic() - started:.1f}s")
    try:
        urls = {"cluster": state.master_url, "connect": state.connect_url}
        failures = {mode: report for mode in MODES if (report := _run_mode(mode, urls[mode]))}
    finally:
        cluster.stop(state_dir)
    assert not failures, "\n\n".join(f"--- {mode} ---\n{report}" for mode, report in failures.items())
