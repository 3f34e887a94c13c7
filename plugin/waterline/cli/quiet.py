"""Keep the JVM's start-up lines off the user's terminal.

A classic Spark session starts a JVM child that inherits this process's stderr
and writes its banner there (``WARNING: Using incubator modules``, ``Setting
default log level``, SLF4J notes) before any log4j configuration applies. The
CLI prints one line per error, so while the session starts, file descriptor 2
points at a log file instead; the JVM keeps that file as its stderr for its
whole life, and this process gets its own stderr back. ``--verbose`` leaves
stderr alone.
"""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def jvm_log_path() -> Path:
    """Where the JVM's stderr goes: WATERLINE_JVM_LOG, else a per-user file in the temp folder."""
    explicit = os.environ.get("WATERLINE_JVM_LOG")
    if explicit:
        return Path(explicit)
    return Path(tempfile.gettempdir()) / f"waterline-{os.getuid()}" / "jvm.log"


def _verbose() -> bool:
    import click

    context = click.get_current_context(silent=True)
    return bool(context and context.find_root().params.get("verbose"))


@contextmanager
def quiet_jvm() -> Iterator[None]:
    """Point fd 2 at `jvm_log_path()` for the block (a no-op with --verbose)."""
    if _verbose():
        yield
        return
    path = jvm_log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        log = open(path, "ab")
    except OSError:  # nowhere to write it: better noise than a failure
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(log.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        log.close()


def silence_pyspark_error_logs() -> None:
    """PySpark logs every SQL error it raises as a JSON line on stderr (with the Python
    stack); the CLI reports the error itself in one line, so those loggers are switched off
    (--verbose keeps them)."""
    if _verbose():
        return
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # pragma: no cover - older pyspark has no such loggers
        return
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
