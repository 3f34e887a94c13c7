"""Real Dagster processes on a temporary DAGSTER_HOME, for the e2e and browser tests.

Everything binds to 127.0.0.1. Processes start in their own session so the
test can stop exactly the process group it started.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator


BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]

DAGSTER_YAML = """\
telemetry:
  enabled: false
run_queue:
  max_concurrent_runs: 3
  dequeue_interval_seconds: 1
sensors:
  use_threads: true
  num_workers: 2
"""

LOCATION = """\
from dagster import DefaultSensorStatus
from waterline.dagster import definitions_from_specs

defs = definitions_from_specs([{spec!r}], default_sensor_status=DefaultSensorStatus.STOPPED)
"""


def prepare(root: Path, spec_yaml: Path) -> dict:
    """A DAGSTER_HOME and a code location file (`-f loc.py`) for one spec."""
    home = root / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(DAGSTER_YAML)
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(home)):  # create the sqlite storages once, before any process races
        pass
    location = root / "loc.py"
    location.write_text(LOCATION.format(spec=str(spec_yaml)))
    env = dict(os.environ)
    env.update({
        "DAGSTER_HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "PYSPARK_PYTHON": sys.executable,
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "PATH": os.pathsep.join([str(BIN), env.get("PATH", "")]),
    })
    # each run the daemon launches is its own short-lived Spark driver: SPARK_SUBMIT_OPTS (tests/jvm.py) is in env
    return {"home": home, "location": location, "env": env, "root": root}


def cli(deployment: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run a dagster CLI command against the deployment; returns the completed process."""
    return subprocess.run(
        [str(BIN / args[0]), *args[1:]], cwd=str(deployment["root"]), env=deployment["env"],
        capture_output=True, text=True, timeout=timeout,
    )


@contextmanager
def process(deployment: dict, *args: str, log_name: str) -> Iterator[subprocess.Popen]:
    """A long-running dagster process (daemon, dev), stopped with its process group on exit."""
    log = open(deployment["root"] / f"{log_name}.log", "w")
    proc = subprocess.Popen(
        [str(BIN / args[0]), *args[1:]], cwd=str(deployment["root"]), env=deployment["env"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        yield proc
    finally:
        stop(proc)
        log.close()


def stop(proc: subprocess.Popen, grace: float = 20) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C to the group this test started (start_new_session)
    except ProcessLookupError:
        return
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def wait_for(predicate: Callable[[], object], *, timeout: float, interval: float = 1.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(deployment: dict, log_name: str, chars: int = 4000) -> str:
    path = deployment["root"] / f"{log_name}.log"
    return path.read_text()[-chars:] if path.exists() else ""
