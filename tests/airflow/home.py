"""A real Airflow 3 on a temporary AIRFLOW_HOME (SQLite) for the tests: CLI calls and `airflow standalone`.

Everything runs as subprocesses of the venv's ``airflow`` with an environment
naming the temporary home, a DAG folder holding one DAG file built by
`waterline.airflow.dags_from_specs`, and every server bound to 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Iterator

import yaml

from tests.dagster.deploy import free_port, stop

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
LOOPBACK = REPO / "build" / "airflow_loopback"

DAG_FILE = """\
# Built by the waterline tests: every spec in {feeds} as Airflow DAGs.
from pathlib import Path

from waterline.airflow import dags_from_specs

globals().update(dags_from_specs(sorted(Path({feeds!r}).glob("*.yaml")), release_paused=False, {extra}))
{code}"""


class AirflowHome:
    """A temporary AIRFLOW_HOME with its SQLite database migrated and a DAG file for ``feeds``."""

    def __init__(self, root: Path, feeds: Path, *, dag_kwargs: str = "", dag_code: str = "",
                 port: int | None = None) -> None:
        self.root = root
        self.home = root / "airflow_home"
        self.dags = root / "dags"
        self.home.mkdir(parents=True, exist_ok=True)
        self.dags.mkdir(parents=True, exist_ok=True)
        (self.dags / "waterline_feeds.py").write_text(DAG_FILE.format(feeds=str(feeds), extra=dag_kwargs, code=dag_code))
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")},
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS": "tests.airflow.sqlite_connect.CONNECT_ARGS",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS_ASYNC": "tests.airflow.sqlite_connect.ASYNC_CONNECT_ARGS",
            # No login in the UI and the REST API: a test instance on loopback only.
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__BASE_URL": self.url,
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
            "PYTHONPATH": str(REPO),
            # standalone starts its components as `airflow <component>` from PATH: the wrapper
            # first on it keeps them on loopback (no log servers on every interface).
            "PATH": os.pathsep.join([str(LOOPBACK), str(BIN), os.environ.get("PATH", "")]),
            "WATERLINE_AIRFLOW": str(BIN / "airflow"),
            "PYSPARK_PYTHON": sys.executable,
        }

    def cli(self, *args: str, timeout: float = 600, check: bool = True,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """``airflow ARGS``, waited for; ``env`` adds to the home's environment for this call.

        A call that failed on SQLite's "database is locked" runs again (up to 6 tries, 2-10 s
        apart; 3 tries 2 and 4 s apart all failed once in a full run on a loaded machine): the
        busy timeout does not help when a read transaction must upgrade to a write while a
        component holds the write lock (SQLite refuses at once rather than deadlock), and
        Airflow undoes such a half-made backfill precisely so that the caller can retry.
        """
        for attempt in range(6):
            proc = subprocess.run([str(BIN / "airflow"), *args], cwd=str(self.root), env={**self.env, **(env or {})},
                                  capture_output=True, text=True, timeout=timeout)
            if proc.returncode == 0 or "database is locked" not in proc.stdout + proc.stderr:
                break
            time.sleep(2 * (attempt + 1))
        if check and proc.returncode != 0:
            raise AssertionError(f"airflow {' '.join(args)} exited {proc.returncode}:\n"
                                 f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
        return proc

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        """``airflow ARGS`` in the background, its stdout and stderr in a file (``.output``, read
        with `finish`): a pipe nobody reads would stall it."""
        output = self.root / f"airflow-{'-'.join(args[:2])}-{time.monotonic_ns()}.log"
        with open(output, "w") as fh:
            proc = subprocess.Popen([str(BIN / "airflow"), *args], cwd=str(self.root), env={**self.env, **(env or {})},
                                    stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        proc.output = output  # type: ignore[attr-defined]
        return proc

    @staticmethod
    def finish(proc: subprocess.Popen, *, timeout: float = 600) -> str:
        """Wait for a `start`-ed command; its output. Fails unless it exited 0."""
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(proc, grace=10)
            raise
        out = proc.output.read_text(errors="replace")  # type: ignore[attr-defined]
        if code != 0:
            raise AssertionError(f"airflow {' '.join(map(str, proc.args[1:]))} exited {code}:\n{out[-6000:]}")
        return out

    def task_tries(self, dag_id: str) -> list[tuple[int, str]]:
        """(try_number, state) of every task instance of ``dag_id``, read from the SQLite database."""
        with closing(sqlite3.connect(self.home / "airflow.db", timeout=60)) as db:
            return db.execute("SELECT try_number, state FROM task_instance WHERE dag_id = ? ORDER BY rowid",
                              (dag_id,)).fetchall()

    def asset_events(self) -> dict[str, list[dict]]:
        """Every asset event's extra, per asset name, oldest first, read from the SQLite database."""
        with closing(sqlite3.connect(self.home / "airflow.db", timeout=60)) as db:
            rows = db.execute("SELECT a.name, e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id "
                              "ORDER BY e.id").fetchall()
        by_asset: dict[str, list[dict]] = {}
        for name, extra in rows:
            by_asset.setdefault(name, []).append(json.loads(extra))
        return by_asset

    def migrate(self) -> None:
        self.cli("db", "migrate", timeout=300)

    @contextmanager
    def standalone(self) -> Iterator[subprocess.Popen]:
        """``airflow standalone`` (scheduler, dag-processor, triggerer, api-server), stopped on exit."""
        log = open(self.root / "standalone.log", "w")
        proc = subprocess.Popen([str(BIN / "airflow"), "standalone"], cwd=str(self.root), env=self.env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            yield proc
        finally:
            stop(proc, grace=30)
            log.close()

    def log_tail(self, chars: int = 6000) -> str:
        path = self.root / "standalone.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def spec_yaml(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


__all__ = ["AirflowHome", "spec_yaml"]
