"""waterline's two error families as Airflow task outcomes its scheduler can act on.

* `TransientError` (the feed lease busy or lost, a commit race lost): nothing wrong
  was committed and running again is the fix. It is raised again as a fresh error
  of its own type and message (not chained: a lost race's cause may be a Spark
  error carrying a Java stack), so Airflow's task ``retries`` run (``retry_delay``
  apart) and callbacks and retry policies see its type (`LeaseBusy`, `LeaseLost`,
  `CommitRaceLost`).
* Any other `WaterlineError` (bad input, a transform failing on its data): an
  `AirflowFailException` with the CLI's one-line message, so the task fails at
  once, without retries, since running it again changes nothing. A spec file that
  changes what the feed publishes and was not applied (`SpecNotApplied`) reads
  ``spec not applied: ...``, the line the Dagster sensor skips with: the fix is the
  feed's ``<feed>_apply`` DAG (or ``waterline apply``).

Anything else (a lost executor, a store outage) is left to Airflow: it follows
the task's ``retries``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from waterline.errors import SpecNotApplied, TransientError, WaterlineError


@contextmanager
def airflow_failures(log: logging.Logger | Any) -> Iterator[None]:
    """Translate the errors raised in the block (see the module's docstring), logging each
    one's line to ``log`` (the task log) first."""
    try:
        yield
    except TransientError as err:
        log.warning("%s (transient: the task's retries apply)", err)
        raise _unchained(err) from None
    except SpecNotApplied as err:
        log.error("spec not applied: %s", err)
        raise AirflowFailException(f"spec not applied: {err}") from None
    except WaterlineError as err:
        log.error("%s", err)
        raise AirflowFailException(str(err)) from None



def _unchained(err: TransientError) -> TransientError:
    """A new ``type(err)`` with ``err``'s message and no traceback or cause. (Re-raising ``err``
    itself would keep both: `contextmanager` restores the traceback of the error it threw in.)"""
    try:
        return type(err)(str(err))
    except TypeError:  # a subclass with another signature
        return TransientError(str(err))


__all__ = ["airflow_failures"]
