"""SIGTERM and Ctrl-C (SIGINT) stop a long-running run within its grace, the feed lease given back.

`waterline stream` and `waterline release --wait-until-due` run inside `stop_on_signals`.
The first signal asks the run to stop: a long-running stream through its ``stop`` event
(its queries finish their current batch), anything else by `Stopped` raised in the main
thread, so every ``finally`` runs (the lease given back, a stage discarded, Spark's queries
stopped). Whatever the run is doing then, a step that never returns included (a Spark job,
a wait, a batch callback on another thread), a watchdog ends it when the grace
(`stop_grace`, 120 s) is up: it gives back every lease the process holds
(`waterline.engine.tables.lease.abandon_all`) and exits at once. A second signal does the
same without waiting. No JVM.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from waterline.engine.tables.lease import abandon_all

#: How long a stopping run may take to end (a stream's current batch to finish) before it is ended anyway.
STOP_GRACE_S = 120.0
#: Overrides `STOP_GRACE_S` (seconds): for tests, and for operators whose scheduler kills sooner.
GRACE_ENV = "WATERLINE_STOP_GRACE_S"
SIGNALS = (signal.SIGTERM, signal.SIGINT)

log = logging.getLogger(__name__)


def _quietly(cancel, frame) -> None:
    try:
        cancel(signal.SIGINT, frame)
    except BaseException:  # noqa: BLE001  (its KeyboardInterrupt, or a JVM already gone)
        pass


class _NoInterruptTraceback(logging.Filter):
    """Drops a record that carries the stop's own KeyboardInterrupt (`Stopped`): py4j logs
    "KeyboardInterrupt while sending command." with its traceback on the root logger when
    the stop lands inside a call to the JVM, and with no handler configured Python prints it
    on stderr. The stop is reported once, in one line, by whoever catches `Stopped`."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        seen = 0
        # py4j's connection shutdown logs a BrokenPipeError raised while handling the stop
        while error is not None and seen < 16:
            if isinstance(error, KeyboardInterrupt):
                return False
            error = error.__cause__ or error.__context__
            seen += 1
        return True


_QUIET = _NoInterruptTraceback()
#: Where the records come from: a logger's filter sees only the records made on that logger,
#: not those its children hand up, so py4j's own loggers carry it too.
_QUIETED = ("", "py4j", "py4j.java_gateway", "py4j.clientserver")


class Stopped(KeyboardInterrupt):
    """The run was asked to stop by a signal. A KeyboardInterrupt, as Ctrl-C's own: no
    ``except Exception`` on the way up swallows it, every ``finally`` runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


def stop_grace() -> float:
    """The grace a stopping run has (`GRACE_ENV`, else `STOP_GRACE_S`)."""
    return float(os.environ.get(GRACE_ENV) or STOP_GRACE_S)


def exit_code(signum: int) -> int:
    """The shell's code for a process ended by ``signum`` (143 for SIGTERM, 130 for SIGINT)."""
    return 128 + signum


@contextmanager
def stop_on_signals(what: str, *, stop: threading.Event | None = None,
                    grace_s: float | None = None) -> Iterator[None]:
    """Run the block so that SIGTERM and SIGINT stop it within ``grace_s`` (see the module).

    ``stop``: set on the first signal, for a run that stops by itself when asked (a
    long-running stream); without it the first signal cancels the Spark jobs running (through
    PySpark's own SIGINT handler, when a session installed one before the block) and raises
    `Stopped` in the main thread. ``what`` names the run in the message of a forced stop.
    The previous handlers are put back after the block. In a thread other than the main one
    (where Python allows no handler) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    grace = stop_grace() if grace_s is None else grace_s
    asked = threading.Event()

    def handler(signum: int, frame) -> None:
        if asked.is_set():  # a second signal: no more waiting
            _force(what, signum, f"a second {signal.Signals(signum).name}")
        asked.set()
        end_within_grace(what, signum, grace_s=grace)
        if stop is not None:
            stop.set()  # the run ends its current step and returns
            return
        if cancel is not None:
            # PySpark's own Ctrl-C handler cancels the running Spark jobs, from another thread:
            # here the main thread may be inside a call to the JVM, whose connection it holds
            threading.Thread(target=_quietly, args=(cancel, frame), name="wl-stop-cancel", daemon=True).start()
        raise Stopped(signum)

    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    before = previous[signal.SIGINT]
    cancel = before if callable(before) and getattr(before, "__module__", "").startswith("pyspark") else None
    for name in _QUIETED:  # py4j logs the interrupt it was in, with its traceback
        logging.getLogger(name).addFilter(_QUIET)
    try:
        yield
    finally:
        for name in _QUIETED:
            logging.getLogger(name).removeFilter(_QUIET)
        for sig, old in previous.items():
            signal.signal(sig, old)


_watchdog_started = threading.Lock()
_told = threading.Event()


def stop_told() -> None:
    """The stop was told in its one line: a watchdog that fires later (the process's own exit
    outlasting the grace) ends it without a second line."""
    _told.set()


def end_within_grace(what: str, signum: int = signal.SIGTERM, *, grace_s: float | None = None) -> None:
    """Arm the watchdog once per process: when ``grace_s`` (`stop_grace`) is up, every lease the
    process holds is given back and it exits with ``signum``'s code. For a run asked to stop
    by someone else's signal handler (Airflow's ``on_kill``), and by `stop_on_signals`. It
    stays armed until the process ends, not the block: what runs after it (a stuck batch
    thread the exit would wait for) is bounded too."""
    if not _watchdog_started.acquire(blocking=False):
        return
    grace = stop_grace() if grace_s is None else grace_s
    log.warning("%s: %s: stopping (at most %g s)", what, signal.Signals(signum).name, grace)

    def watchdog() -> None:
        time.sleep(grace)
        _force(what, signum, f"did not stop within {grace:g} s of {signal.Signals(signum).name}")

    threading.Thread(target=watchdog, name="wl-stop-watchdog", daemon=True).start()


def _force(what: str, signum: int, why: str) -> None:
    given_back = abandon_all()
    if not _told.is_set():
        print(f"error: {what}: {why}; stopped now ({given_back} feed lease(s) given back)", file=sys.stderr,
              flush=True)
    os._exit(exit_code(signum))
