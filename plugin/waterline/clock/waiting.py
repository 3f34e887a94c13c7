"""Waiting on the trusted clock for a due instant (pre-armed releases).

A pre-armed release starts before its due moment and must not commit before
it. Sleeping for ``due - now`` once is not enough: the clock may be read a
microsecond early, or the process may be woken early. So the wait sleeps in
small steps and re-reads the clock each time; it returns only a reading that
is at or past the due instant. The release that follows still caps W at the
clock it reads under its lease (`waterline.engine.release.release.release`), so even
a wait that returned early could not publish a row before it is due.
"""

from __future__ import annotations

import time
from typing import Callable

from waterline.clock.trusted import Clock

#: Longest single sleep: short enough that a due moment is met within ~50 ms.
STEP_SECONDS = 0.05


def wait_until(
    clock: Clock,
    due_us: int,
    *,
    max_wait_us: int | None = None,
    step_seconds: float = STEP_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[bool, int]:
    """Sleep until ``clock.now_us() >= due_us``; returns (reached, last clock reading).

    ``reached`` is False when ``max_wait_us`` (measured on the same clock from
    the first reading) ran out first. Never returns True with a reading below
    ``due_us``.
    """
    start = clock.now_us()
    now = start
    while now < due_us:
        if max_wait_us is not None and now - start >= max_wait_us:
            return False, now
        remaining = (due_us - now) / 1e6
        if max_wait_us is not None:
            remaining = min(remaining, (start + max_wait_us - now) / 1e6)
        sleep(max(0.0, min(step_seconds, remaining)))
        now = clock.now_us()
    return True, now
