"""waterline's two error families as Dagster failures a run and its retries can act on.

* `TransientError` (the feed lease busy or lost, a commit race lost): nothing wrong
  was committed, running again is the fix. The step is retried in place
  (``RetryRequested``) and, once the resource's retries are spent, fails as a
  retryable failure, which the instance's run retries may pick up.
* Any other `WaterlineError` (bad input, a transform failing on its data): a
  `Failure` with the CLI's one-line message, no waterline traceback, and no retry,
  since running it again changes nothing.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from dagster import Failure, RetryRequested

from waterline.errors import TransientError, WaterlineError


@contextmanager
def dagster_failures(*, retries: int = 0, wait_seconds: float = 0.0) -> Iterator[None]:
    """Translate the errors raised in the block (see the module's docstring)."""
    try:
        yield
    except TransientError as err:
        raise RetryRequested(max_retries=retries, seconds_to_wait=wait_seconds) from err
    except WaterlineError as err:
        raise Failure(description=str(err), allow_retries=False) from None
