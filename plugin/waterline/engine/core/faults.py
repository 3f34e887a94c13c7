"""Named phase boundaries where crash tests kill the process (a real SIGKILL).

With ``WATERLINE_CRASH_AT=<name>`` set, the process kills itself with SIGKILL
when it reaches that boundary: no cleanup, no finally blocks, exactly like
``kill -9``. Unset (always, in production) it costs one dict lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "WATERLINE_CRASH_AT"

INGEST_BEFORE_COMMIT = "ingest:before-commit"  # quarantine written, held append not yet
INGEST_AFTER_COMMIT = "ingest:after-commit"  # held committed, tier tables not yet ensured
RELEASE_BEFORE_MERGE = "release:before-merge"  # the first tier's commit (staged or MERGE) not yet made
RELEASE_BETWEEN_TIERS = "release:between-tiers"  # first tier committed, the others not
STAGED_BEFORE_COMMIT = "staged:before-commit"  # a pre-staged release's files written, nothing committed

POINTS = (INGEST_BEFORE_COMMIT, INGEST_AFTER_COMMIT, RELEASE_BEFORE_MERGE, RELEASE_BETWEEN_TIERS,
          STAGED_BEFORE_COMMIT)


def boundary(name: str) -> None:
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
