"""The exceptions users see: each ``str()`` is one actionable line.

Two families, because a scheduler must tell them apart:

* `WaterlineError`: the input is at fault (a spec key, a policy fragment, a
  feed's transform failing on its data). Running it again changes nothing.
* `TransientError` (a `WaterlineError` too): the feed was busy or a commit lost
  a race with another writer. Nothing wrong was committed; running it again
  later is the fix. Dagster raises these as retryable failures, Airflow lets its
  task retries run, the CLI exits with 75 (``EX_TEMPFAIL``).
"""

from __future__ import annotations


class WaterlineError(Exception):
    """An error a user can act on. ``str(err)`` is one line naming what is at fault."""

    def __init__(self, message: str) -> None:
        # One line, always: multi-line messages turn into unreadable CLI output.
        super().__init__(" ".join(str(message).split()))


class SpecError(WaterlineError):
    """A feed spec is invalid: ``spec <file>: <key.path>: <what is wrong>``."""


class SpecNotApplied(WaterlineError):
    """The spec file changes what a feed publishes, or when, and has not been applied
    (`waterline apply`): operations refuse it; the release sensor skips its tick with this line."""


class TransientError(WaterlineError):
    """The operation did not happen for a reason that passes: run it again later."""


class LeaseBusy(TransientError):
    """Another process held the feed's lease for longer than this one would wait."""


class LeaseLost(TransientError):
    """This process lost the feed's lease before committing (paused past its expiry)."""


class CommitRaceLost(TransientError):
    """Every attempt's Delta commit lost to a concurrent commit of another writer."""


class OutcomeUnknown(TransientError):
    """The store never said whether a write landed, and reading it back did not tell either.
    Nothing is assumed: the files such a commit would name are kept (gc decides later, by the
    commit's token), and a re-run finds the commit or makes it."""
