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

from contextlib import contextmanager
from typing import Iterator

from waterline.engine.jvm_log import jvm_log_path, jvm_stderr_to_log

__all__ = ["jvm_log_path", "quiet_jvm", "silence_pyspark_error_logs"]


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
    with jvm_stderr_to_log():
        yield


def silence_pyspark_error_logs() -> None:
    """The CLI reports Spark's errors in one line: PySpark's own JSON error lines are
    switched off (--verbose keeps them)."""
    if _verbose():
        return
    from waterline.engine.spark_errors import silence_pyspark_error_logs as silence

    silence()
