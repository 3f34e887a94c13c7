"""A local Spark standalone cluster and Spark Connect server, from the pip-installed pyspark.

``waterline spark start|stop|status`` and the tests' session fixtures use this:
on 127.0.0.1 only, a standalone master, N workers and a Spark Connect server
(with the Delta jars and conf), each in its own process group, on free ports
(or the ones given). Logs, pid files and ``cluster.json`` (URLs, pids) live
under the state folder (default ``.waterline/spark``), never in site-packages.
The pyspark wheel ships ``bin/spark-class`` and ``bin/spark-submit`` but no
``sbin/start-*.sh``, so the daemons are started by class name.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from importlib.util import find_spec
from dataclasses import dataclass, field
from pathlib import Path

from waterline.engine.delta import storage
from waterline.engine.spark.config import DELTA_CONF
from waterline.engine.spark.jars import jar_conf
from waterline.local.processes import SavedState, HOST, alive, free_port, kill_group, port_open, spawn, wait_for
from waterline.errors import WaterlineError

DEFAULT_STATE_DIR = ".waterline/spark"
_STATE_FILE = "cluster.json"
_CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


@dataclass
class ClusterState(SavedState):
    """What `start` started: URLs and the process-group leaders' pids."""

    FILE = _STATE_FILE
    DEFAULT_DIR = DEFAULT_STATE_DIR

    state_dir: str
    master_url: str | None = None
    master_ui: str | None = None
    connect_url: str | None = None
    pids: dict[str, int] = field(default_factory=dict)


    def alive(self) -> dict[str, bool]:
        return {name: alive(pid) for name, pid in self.pids.items()}


def spark_home() -> Path:
    """The pip-installed pyspark folder (it holds bin/ and jars/); found without importing pyspark."""
    spec = find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise WaterlineError("pyspark is not installed: run `make setup`")
    return Path(spec.origin).parent


def start(
    state_dir: str | Path = DEFAULT_STATE_DIR,
    *,
    workers: int = 2,
    worker_cores: int = 1,
    worker_memory: str = "1g",
    master_port: int | None = None,
    connect: bool = True,
    connect_port: int | None = None,
    connect_master: str = "local[2]",
    timeout: float = 120.0,
) -> ClusterState:
    """Start a master + ``workers`` workers (if ``workers`` > 0) and a Connect server (if ``connect``).

    ``connect_master`` is the Connect server's own master: ``local[2]`` (default) or
    ``"cluster"`` for the standalone master started here. Waits until the workers
    registered and the Connect port accepts connections; on failure stops what it
    started and raises with the log's last line.
    """
    state_dir = Path(state_dir).absolute()
    existing = ClusterState.load(state_dir)
    if existing and any(existing.alive().values()):
        raise WaterlineError(f"a local Spark cluster is already running from {state_dir}: `waterline spark stop` first")
    (state_dir / "logs").mkdir(parents=True, exist_ok=True)
    state = ClusterState(state_dir=str(state_dir))
    try:
        if workers:
            _start_master(state, master_port or free_port())
            for i in range(workers):
                _start_worker(state, i, worker_cores, worker_memory)
            _wait(lambda: _alive_workers(state) >= workers, timeout, state, "master", f"{workers} workers to register")
        if connect:
            if connect_master == "cluster" and not state.master_url:
                raise WaterlineError("connect_master 'cluster' needs workers > 0")
            master = state.master_url if connect_master == "cluster" else connect_master
            port = connect_port or free_port()
            _start_connect(state, port, master)
            _wait(lambda: port_open(port), timeout, state, "connect", f"Spark Connect on port {port}")
    except BaseException:
        stop(state_dir, state=state)
        raise
    state.save()
    return state


def stop(state_dir: str | Path = DEFAULT_STATE_DIR, *, state: ClusterState | None = None) -> list[str]:
    """Stop every process group `start` started (SIGTERM, then SIGKILL); returns their names."""
    state = state or ClusterState.load(state_dir)
    if state is None:
        return []
    # Connect first, workers before the master: each stops cleanly while the others still run.
    order = sorted(state.pids, key=lambda n: (not n.startswith("connect"), not n.startswith("worker"), n))
    stopped = []
    for name in order:
        if kill_group(state.pids[name]):
            stopped.append(name)
    path = Path(state.state_dir, _STATE_FILE)
    if path.exists():
        path.unlink()
    for pid_file in Path(state.state_dir).glob("*.pid"):
        pid_file.unlink()
    return stopped


def describe(state: ClusterState | None) -> list[str]:
    """`waterline spark status` lines: URLs and which processes are alive."""
    if state is None:
        return ["no local Spark cluster started (waterline spark start)"]
    lines = []
    if state.master_url:
        lines += [f"master   {state.master_url}   (ui {state.master_ui})",
                  f"         export WATERLINE_SPARK_MASTER={state.master_url}"]
    if state.connect_url:
        lines += [f"connect  {state.connect_url}",
                  f"         export WATERLINE_SPARK_REMOTE={state.connect_url}"]
    for name, up in state.alive().items():
        lines.append(f"{name:8} pid {state.pids[name]:<8} {'running' if up else 'NOT RUNNING'}")
    lines.append(f"logs     {Path(state.state_dir, 'logs')}")
    return lines


# -- processes ------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=HOST, PYSPARK_PYTHON=sys.executable,
               SPARK_NO_DAEMONIZE="1")
    env.pop("SPARK_REMOTE", None)
    return env


def _spawn(state: ClusterState, name: str, argv: list[str]) -> None:
    pid = spawn(argv, log_path=_log(state, name), env=_env(), cwd=state.state_dir)
    state.pids[name] = pid
    Path(state.state_dir, f"{name}.pid").write_text(str(pid))


def _start_master(state: ClusterState, port: int) -> None:
    ui = free_port()
    _spawn(state, "master", [str(spark_home() / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
                             "--host", HOST, "--port", str(port), "--webui-port", str(ui)])
    state.master_url, state.master_ui = f"spark://{HOST}:{port}", f"http://{HOST}:{ui}"
    _wait(lambda: port_open(port), 60, state, "master", f"the master on port {port}")


def _start_worker(state: ClusterState, i: int, cores: int, memory: str) -> None:
    work = Path(state.state_dir, f"work-{i}")
    work.mkdir(exist_ok=True)
    _spawn(state, f"worker-{i}", [
        str(spark_home() / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker",
        "--host", HOST, "--webui-port", str(free_port()), "--cores", str(cores), "--memory", memory,
        "--work-dir", str(work), state.master_url,
    ])


def _start_connect(state: ClusterState, port: int, master: str) -> None:
    conf = {
        **DELTA_CONF,
        # s3a:// endpoint and credentials from this environment's AWS variables: a
        # Connect client cannot set Hadoop filesystem conf after the server started.
        **storage.spark_conf(),
        "spark.connect.grpc.binding.address": HOST,
        "spark.connect.grpc.binding.port": str(port),
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
        "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.databricks.delta.snapshotPartitions": "2",  # a few cores: Delta's default 50 costs ~10x
        "spark.databricks.delta.autoCompact.enabled": "false",
        "spark.sql.warehouse.dir": str(Path(state.state_dir, "spark-warehouse")),
        "spark.driver.memory": "2g",
        **jar_conf(),  # Delta's and waterline's jars: `make setup`'s folder, WATERLINE_JARS, or Ivy
    }
    # A properties file rather than --conf: S3 secrets stay out of `ps` output.
    props = Path(state.state_dir, "connect.properties")
    props.touch(mode=0o600)
    props.write_text("".join(f"{key}={_escape_property(value)}\n" for key, value in conf.items()))
    argv = [str(spark_home() / "bin" / "spark-submit"), "--class", _CONNECT_CLASS, "--name", "waterline-connect",
            "--master", master, "--properties-file", str(props)]
    _spawn(state, "connect", argv)
    state.connect_url = f"sc://{HOST}:{port}"


def _escape_property(value: str) -> str:
    """A value as java.util.Properties reads it back (backslashes, line breaks, leading blanks)."""
    out = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return "\\" + out if out[:1] in (" ", "\t") else out


def _wait(ready, timeout: float, state: ClusterState, name: str, what: str) -> None:
    wait_for(ready, timeout, pid=state.pids.get(name), log_path=_log(state, name), what=what)


def _log(state: ClusterState, name: str) -> Path:
    return Path(state.state_dir, "logs", f"{name}.log")


def _alive_workers(state: ClusterState) -> int:
    try:
        with urllib.request.urlopen(f"{state.master_ui}/json/", timeout=2) as response:
            return int(json.load(response).get("aliveworkers", 0))
    except (OSError, ValueError):  # not listening yet, or a starting UI answering with its HTML page
        return 0
