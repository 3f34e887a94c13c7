"""Named phase boundaries where crash tests kill the process (a real SIGKILL).

With ``WATERLINE_CRASH_AT=<name>`` set, the process kills itself with SIGKILL
when it reaches that boundary: no cleanup, no finally blocks, exactly like
``kill -9``. ``<name>@<n>`` kills at the n-th time the boundary is reached (a
stream passes each boundary once per micro-batch, so a test can pick the batch).
Unset (always, in production) it costs one dict lookup.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

ENV = "WATERLINE_CRASH_AT"

INGEST_BEFORE_COMMIT = "ingest:before-commit"  # quarantine and version files written, held commit not yet
INGEST_AFTER_COMMIT = "ingest:after-commit"  # held committed, tier tables not yet ensured
RELEASE_BEFORE_MERGE = "release:before-merge"  # the first tier's commit (staged or MERGE) not yet made
RELEASE_BETWEEN_TIERS = "release:between-tiers"  # first tier committed, the others not
STAGED_BEFORE_COMMIT = "staged:before-commit"  # a pre-staged release's files written, nothing committed
STREAM_BATCH_START = "stream:batch-start"  # a micro-batch handed to waterline, nothing read yet
STREAM_BATCH_END = "stream:batch-end"  # a micro-batch committed (released, running long), Spark's checkpoint not yet

POINTS = (INGEST_BEFORE_COMMIT, INGEST_AFTER_COMMIT, RELEASE_BEFORE_MERGE, RELEASE_BETWEEN_TIERS,
          STAGED_BEFORE_COMMIT, STREAM_BATCH_START, STREAM_BATCH_END)

_reached: Counter[str] = Counter()


def boundary(name: str) -> None:
    wanted = os.environ.get(ENV)
    if wanted is None:
        return
    point, _, nth = wanted.partition("@")
    if point != name:
        return
    _reached[name] += 1
    if _reached[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
