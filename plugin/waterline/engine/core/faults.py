"""Named phase boundaries where crash tests kill the process (a real SIGKILL).

With ``WATERLINE_CRASH_AT=<name>`` set, the process kills itself with SIGKILL
when it reaches that boundary: no cleanup, no finally blocks, exactly like
``kill -9``. ``<name>@<n>`` kills at the n-th time the boundary is reached (a
stream passes each boundary once per micro-batch, so a test can pick the batch).
``WATERLINE_HANG_AT=<name>`` makes the boundary a step that never returns, for the tests
of stopping (`waterline.engine.tables.stopping`). Unset (always, in production) each costs
one dict lookup.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import Counter

ENV = "WATERLINE_CRASH_AT"
#: ``WATERLINE_HANG_AT=<name>``: the process hangs at that boundary (for the tests of stopping).
HANG_ENV = "WATERLINE_HANG_AT"

# A feed's first writes: its tables' creation (held by a stream's first batch, the tiers
# after the first held commit or by whichever later run finds one missing).
CREATE_HELD_BEFORE = "create:held-before"  # a stream's first batch: no table of the feed yet
CREATE_HELD_AFTER = "create:held-after"  # held's version 0 written, no tier yet
CREATE_TIER_BEFORE = "create:tier-before"  # held exists, the first missing tier not created yet
CREATE_BETWEEN_TIERS = "create:between-tiers"  # a tier created, the next missing one not yet
CREATE_TIER_AFTER = "create:tier-after"  # every missing tier created, nothing else done since
# Every ingest and stream batch, the first included.
INGEST_BEFORE_COMMIT = "ingest:before-commit"  # quarantine and version files written, held commit not yet
INGEST_AFTER_COMMIT = "ingest:after-commit"  # held committed, tier tables not yet ensured
# Every release, the first included.
RELEASE_BEFORE_MERGE = "release:before-merge"  # the first tier's commit (staged or MERGE) not yet made
RELEASE_BETWEEN_TIERS = "release:between-tiers"  # first tier committed, the others not
RELEASE_BEFORE_PROPERTY = "release:before-property"  # Spark path: a tier's MERGE committed, its property commit not
RELEASE_AFTER_TIERS = "release:after-tiers"  # every tier committed, the lease not yet given back
STAGED_BEFORE_COMMIT = "staged:before-commit"  # a pre-staged release's files written, nothing committed
# `waterline apply` of a new tier or a changed policy on a live feed (engine.release.respec).
APPLY_AFTER_RESCHEDULE = "apply:after-reschedule"  # held's schedule recomputed, new tiers not built, version not recorded
APPLY_BEFORE_RECORD = "apply:before-record"  # held rescheduled and new tiers built, the spec version not recorded
# `waterline apply` adding a column (issue 56): one table has it, the others and the spec version not yet.
APPLY_AFTER_TABLE = "apply:after-table"
# A Delta checkpoint of a table waterline commits to (at the table's checkpoint interval).
CHECKPOINT_BEFORE = "checkpoint:before"  # a commit landed, its checkpoint not written
CHECKPOINT_AFTER = "checkpoint:after"  # the checkpoint written, old log files not yet cleaned
# A stream's micro-batch (its first included).
STREAM_BATCH_START = "stream:batch-start"  # a micro-batch handed to waterline, nothing read yet
STREAM_BATCH_END = "stream:batch-end"  # a micro-batch committed (released, running long), Spark's checkpoint not yet

#: The boundaries of a feed's first writes (`FIRST_WRITES`) and of every later one.
FIRST_WRITES = (CREATE_HELD_BEFORE, CREATE_HELD_AFTER, CREATE_TIER_BEFORE, CREATE_BETWEEN_TIERS, CREATE_TIER_AFTER)
POINTS = (*FIRST_WRITES, INGEST_BEFORE_COMMIT, INGEST_AFTER_COMMIT, RELEASE_BEFORE_MERGE, RELEASE_BETWEEN_TIERS,
          RELEASE_BEFORE_PROPERTY, RELEASE_AFTER_TIERS, STAGED_BEFORE_COMMIT, APPLY_AFTER_RESCHEDULE,
          APPLY_BEFORE_RECORD, CHECKPOINT_BEFORE, CHECKPOINT_AFTER,
          STREAM_BATCH_START, STREAM_BATCH_END, APPLY_AFTER_TABLE)

_reached: Counter[str] = Counter()


def boundary(name: str) -> None:
    """Kill the process here if `ENV` names this boundary (and its pass), hang it if `HANG_ENV` does."""
    wanted = os.environ.get(ENV)
    if wanted is not None:
        point, _, nth = wanted.partition("@")
        if point == name:
            _reached[name] += 1
            if _reached[name] >= int(nth or 1):
                os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get(HANG_ENV) == name:
        _hang(name)


def _hang(name: str) -> None:
    """A step that never returns (a stuck Spark job, a search that never ends): what stopping
    tests stop. Only with `HANG_ENV` set, never in production."""
    print(f"waterline fault: hanging at {name}", file=sys.stderr, flush=True)
    while True:
        time.sleep(60)
