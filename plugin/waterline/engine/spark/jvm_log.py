"""Where a classic Spark session's JVM writes: a log file, not the caller's stderr.

A classic session starts a JVM child that inherits this process's file
descriptor 2 and keeps it for its whole life: its banner (``WARNING: Using
incubator modules``, ``Setting default log level``) and every log4j line after
it, such as an executor's ERROR with a full Java stack for a failing cast. The
CLI and the Airflow operators report errors in one line, so while the session
starts, fd 2 points at `jvm_log_path()`; the JVM keeps that file, and this
process gets its own stderr back.
"""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from pyspark.sql import SparkSession

from waterline.engine.spark.config import SessionConfig
from waterline.engine.spark.session import get_session
from waterline.engine.spark.errors import silence_pyspark_error_logs


def jvm_log_path() -> Path:
    """WATERLINE_JVM_LOG, else a per-user file in the temp folder."""
    explicit = os.environ.get("WATERLINE_JVM_LOG")
    if explicit:
        return Path(explicit)
    return Path(tempfile.gettempdir()) / f"waterline-{os.getuid()}" / "jvm.log"


@contextmanager
def jvm_stderr_to_log() -> Iterator[Path | None]:
    """Point fds 2 and 1 at `jvm_log_path()` for the block (a JVM started in it keeps the file);
    yields the path, or None when it cannot be written (then stderr stays as it was)."""
    path = jvm_log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        log = open(path, "ab")
    except OSError:  # nowhere to write it: better noise than a failure
        yield None
        return
    # fd 1 too: a start that resolves spark.jars.packages has Ivy print ":: loading settings ::"
    # on the JVM's stdout, which would break a caller's --json output.
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    try:
        for fd in saved:
            os.dup2(log.fileno(), fd)
        yield path
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        log.close()


def quiet_session(config: SessionConfig, *, quiet: bool = True) -> tuple[SparkSession, Path | None]:
    """The session for ``config`` (see `SessionConfig.for_spec`).

    With ``quiet`` (the caller reports errors in one line: the CLI without
    --verbose, the Airflow operators, a `waterline.Feed` by default) a JVM it
    starts writes to `jvm_log_path()` and PySpark's JSON copy of each SQL error
    is off. Returns the session and the JVM log's path: None when not quiet,
    over Spark Connect (no local JVM), or when the file cannot be written.
    """
    if not quiet:
        return get_session(config), None
    with jvm_stderr_to_log() as path:
        session = get_session(config)
    silence_pyspark_error_logs()
    return session, None if config.mode == "connect" else path
