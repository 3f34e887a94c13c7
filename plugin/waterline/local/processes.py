"""Local server processes on 127.0.0.1: spawn in their own process group, wait, stop.

The Spark standalone cluster (`cluster`) and the Kafka broker (`kafka_broker`) are both JVM
daemons started by class name, logging to a file under a state folder and stopped by
signalling their whole group (a launcher script execs java; executors are its children).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import ClassVar, TypeVar

from waterline.errors import WaterlineError

HOST = "127.0.0.1"

_S = TypeVar("_S", bound="SavedState")


class SavedState:
    """What a `start` started, kept as JSON in its state folder so a later `stop` or `status`
    (another process) finds it. Subclasses are dataclasses with a ``state_dir`` field and name
    their file and default folder."""

    FILE: ClassVar[str]
    DEFAULT_DIR: ClassVar[str]
    state_dir: str

    def save(self) -> None:
        Path(self.state_dir, self.FILE).write_text(json.dumps(asdict(self), indent=2))  # type: ignore[call-overload]

    @classmethod
    def load(cls: type[_S], state_dir: str | Path | None = None) -> _S | None:
        path = Path(state_dir if state_dir is not None else cls.DEFAULT_DIR, cls.FILE)
        return cls(**json.loads(path.read_text())) if path.exists() else None


def free_port() -> int:
    """A port nobody listens on at 127.0.0.1 now (other engineers' servers share the host)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((HOST, port)) == 0


def spawn(argv: list[str], *, log_path: Path, env: dict[str, str], cwd: str | Path) -> int:
    """Start ``argv`` as the leader of a new process group, output appended to ``log_path``."""
    log = open(log_path, "ab")
    # Own session, so `kill_group` signals the launcher and everything it started.
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env, cwd=cwd, start_new_session=True)
    log.close()
    return proc.pid


def alive(pid: int) -> bool:
    """Whether the process group ``pid`` leads still has a member."""
    try:
        os.killpg(pid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def kill_group(pid: int, grace: float = 15.0) -> bool:
    """SIGTERM the group led by pid, SIGKILL it after ``grace`` seconds; False if it was gone."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)  # reap our own child, if it is one
        except ChildProcessError:
            pass
        if not alive(pid):
            return True
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return True


def last_log_line(path: Path) -> str:
    """The last error line of a daemon's log (else its last line), with where the log is."""
    lines = [line for line in (path.read_text(errors="replace").splitlines() if path.exists() else []) if line.strip()]
    errors = [line for line in lines if "ERROR" in line or "Exception" in line]
    return f"{(errors or lines or ['(no output)'])[-1].strip()} (log: {path})"


def wait_for(ready: Callable[[], bool], timeout: float, *, pid: int | None, log_path: Path, what: str) -> None:
    """Poll ``ready`` until true; fail early, with the log's last error, if ``pid``'s group died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        if pid is not None and not alive(pid):
            break
        time.sleep(0.5)
    raise WaterlineError(f"waiting for {what} failed: {last_log_line(log_path)}")
