"""Helpers of the stopping tests: a CLI run hung at a boundary, signalled, and its lease afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from waterline.engine.core import faults
from waterline.engine.tables.lease import feed_lease, store_for
from waterline.engine.tables.stopping import GRACE_ENV, STOP_GRACE_S, exit_code

CLI = str(Path(sys.executable).with_name("waterline"))
#: The grace the runs under test get: short, so a test does not wait the documented 120 s.
GRACE_S = 10


def start_hung(args: list[str], point: str) -> subprocess.Popen:
    """`waterline ARGS` that hangs when it reaches boundary ``point`` (a step that never returns)."""
    env = dict(os.environ, **{faults.HANG_ENV: point, GRACE_ENV: str(GRACE_S)})
    return subprocess.Popen([CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def wait_for_hang(proc: subprocess.Popen, point: str, *, timeout_s: float = 400) -> list[str]:
    """The run's stderr lines up to its "hanging at ``point``" (fails if it ended first or
    did not get there within ``timeout_s``: a JVM start and a batch, on a busy machine)."""
    seen: list[str] = []
    reached = threading.Event()

    def read() -> None:
        for line in proc.stderr:
            seen.append(line)
            if f"hanging at {point}" in line:
                reached.set()
                return

    threading.Thread(target=read, daemon=True).start()
    assert reached.wait(timeout_s), f"never reached {point}: rc={proc.poll()}\n{''.join(seen)}"
    return seen


def stop_and_wait(proc: subprocess.Popen, signum: int) -> tuple[int, str]:
    """Send ``signum``; the exit code and the rest of stderr. The run must end within the
    documented grace (`STOP_GRACE_S`), the bound the user is promised."""
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"not stopped within {STOP_GRACE_S:g} s of {signal.Signals(signum).name}") from None
    return proc.returncode, err


def assert_stopped_and_lease_free(proc: subprocess.Popen, signum: int, feed_dir: str, feed: str) -> None:
    """The run ended with the signal's exit code, having given its lease back (not merely
    died: another machine could not tell a dead holder), and another run takes it at once."""
    code, err = stop_and_wait(proc, signum)
    assert code == exit_code(signum), f"exit {code}: {err}"
    # the stop is told in one line, never with a bare traceback (py4j's interrupted call included)
    assert not [line for line in err.splitlines() if line.startswith("Traceback")], err
    told = [line for line in err.splitlines() if line.startswith(("stopped: ", "error: "))]
    assert len(told) == 1 and signal.Signals(signum).name in told[0], err
    body, _ = store_for(feed_dir).read()
    assert json.loads(body)["expires_at"] == 0.0, f"the lease was not given back: {body!r}"
    with feed_lease(feed_dir, feed=feed, timeout_s=0):
        pass
