"""The `waterline` command: plan, ingest, backfill, release, status, hold/resume, gc, demo.

Every error is one line on stderr and a non-zero exit (2: the input is at fault, a spec
mistake `plan` refuses before any JVM, or `status` of a warehouse holding no table of the
feed; 75, ``EX_TEMPFAIL``: the feed was busy or a commit lost a race, run it again later;
3: `audit` could not prove every release on time; 1: anything else); `--verbose` adds
the traceback.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import traceback

import click

from waterline.cli.commands import cli
from waterline.cli.report import report_group
from waterline.cli.share import share_group
from waterline.feed import Stopped, exit_code, stop_told
from waterline.errors import TransientError, WaterlineError
from waterline.extras import missing_extra

cli.add_command(share_group)
cli.add_command(report_group)

EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 1
EXIT_TRANSIENT = 75  # sysexits.h EX_TEMPFAIL: cron wrappers and schedulers retry on it


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the click group, turning every failure into one line."""
    args = sys.argv[1:] if argv is None else argv
    verbose = "--verbose" in args or "-v" in args
    try:
        # outside standalone mode click returns a command's Exit code instead of exiting
        code = cli.main(args=args, prog_name="waterline", standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except Stopped as exc:  # SIGTERM or Ctrl-C during a long-running command: its finally blocks ran
        _stopped(exc)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort as exc:
        if isinstance(exc.__cause__, Stopped):  # click turns a KeyboardInterrupt into Abort
            _stopped(exc.__cause__)
        click.echo("error: aborted", err=True)
        sys.exit(EXIT_INTERNAL_ERROR)
    except click.ClickException as exc:
        click.echo(f"error: {exc.format_message()}", err=True)
        sys.exit(EXIT_USER_ERROR)
    except WaterlineError as exc:
        if verbose:
            traceback.print_exc()
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_TRANSIENT if isinstance(exc, TransientError) else EXIT_USER_ERROR)
    except Exception as exc:  # Spark and Delta errors: keep the first line, the rest behind --verbose
        if verbose:
            traceback.print_exc()
        if (hint := missing_extra(exc)) is not None:  # an optional part not installed: say which extra
            click.echo(f"error: {hint}", err=True)
            sys.exit(EXIT_USER_ERROR)
        first = (str(exc).strip().splitlines() or [""])[0]
        click.echo(f"error: {type(exc).__name__}: {first} (run with --verbose for details)", err=True)
        sys.exit(EXIT_INTERNAL_ERROR)


def _stopped(exc: Stopped) -> None:
    click.echo(f"stopped: {exc}", err=True)
    stop_told()  # the exit below may outlast the grace (a JVM shutting down): no second line then
    sys.exit(exit_code(exc.signum))


def console() -> None:
    """The ``waterline`` executable: `main`, then an exit that skips the interpreter's teardown
    of native libraries.

    Arrow's C++ thread pools (pyarrow, under deltalake's reads) can abort that teardown,
    after the command has finished and printed its result: "terminate called without an
    active exception", exit -6 (apache/arrow#34314), seen on `waterline report usage` in a
    full test run. A script would read a successful command as a crash. So once the command
    is done, its output flushed, Python's logging shut down and any non-daemon thread
    joined (as a normal exit would), the process ends with the command's code.
    """
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # a reader that went away (`| head`), or a closed stream
            pass
    logging.shutdown()
    os._exit(code)
