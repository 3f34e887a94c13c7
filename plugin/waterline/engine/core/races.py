"""Lost commit races and the one way waterline retries them.

Two writers of a feed are serialised by the feed lease, and every commit
carries a Delta transaction version; still, a commit can fail to land: Delta
reports a conflict with a concurrent commit, or skips ours because a newer
writer already used its transaction version. The writer must then re-read the
state and recompute, never assume its work is in. `retry_lost_races` is that
loop, for ingest and release alike.
"""

from __future__ import annotations

import uuid
from typing import Callable, TypeVar

from waterline.errors import CommitRaceLost

T = TypeVar("T")

#: Attempts of an operation whose commit keeps losing races before it gives up.
ATTEMPTS = 3


class SkippedCommit(Exception):
    """A waterline commit did not land: Delta skipped it as already applied (a newer
    writer used its transaction version) or a concurrent commit won."""


def new_token() -> str:
    """A unique id for one commit attempt, stored in its state to find the commit again."""
    return uuid.uuid4().hex


def retry_lost_races(
    attempt: Callable[[], T],
    *,
    is_race: Callable[[BaseException], bool],
    before_retry: Callable[[], None],
    what: str,
    attempts: int = ATTEMPTS,
) -> T:
    """``attempt()`` until it returns, re-running it after a lost race (``is_race``).

    ``before_retry`` runs before each new attempt (the engine checks its lease
    there: a successor holding the feed stops the run, nothing of ours landed).
    After ``attempts`` lost races a `CommitRaceLost` names ``what`` (transient:
    a scheduler may run it again).
    """
    for number in range(1, attempts + 1):
        try:
            return attempt()
        except Exception as exc:
            if not (isinstance(exc, SkippedCommit) or is_race(exc)):
                raise
            before_retry()
            if number == attempts:
                raise CommitRaceLost(f"{what} lost {attempts} commit races") from exc
    raise AssertionError("unreachable")
