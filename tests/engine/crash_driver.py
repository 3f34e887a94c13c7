"""A fixed ingest/release scenario, runnable in a subprocess that may be killed mid-way.

``python -m tests.engine.crash_driver ROOT CRASH_STEP CRASH_POINT`` runs step CRASH_STEP
on a warehouse that already went through the earlier steps, with the crash point
(see `waterline.engine.core.faults`) armed; the test prepares and recovers in-process.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.engine.feedkit import far_future_clock, make_spec, write_partition
from waterline import Feed
from waterline.clock import parse_instant
from waterline.engine.core import faults
from waterline.engine.release.prearmed import release_prestaged

TIERS = {
    "rt": "TRUE",
    "d15": "event_time + INTERVAL 15 MINUTES <= WATERLINE()",
    "win": "event_time <= WATERLINE() AND WATERLINE() < event_time + INTERVAL 30 MINUTES",
}
V1 = [{"id": i, "event_time": f"2026-01-01 10:{i * 5:02d}:00", "status": "final", "v": "a"} for i in range(8)]
V2 = [dict(r, v="b") if r["id"] % 3 == 0 else r for r in V1 if r["id"] != 5] + [
    {"id": 9, "event_time": "2026-01-01 10:01:00", "status": "final", "v": "late"}
]
STEPS = [
    ("ingest", V1),
    ("release", "2026-01-01T10:20:00Z"),
    ("ingest", V2),
    ("release", "2026-01-01T10:40:00Z"),
    ("release", "2026-01-01T11:30:00Z"),
]


def crash_spec(root: Path, warehouse: str | None = None):
    """The scenario's feed: sources under ``root``, tables under ``warehouse`` (else ``root``)."""
    return make_spec(root, TIERS, **({"warehouse": warehouse} if warehouse else {}))


def run_steps(
    spark, root: Path, start: int = 0, crash_step: int | None = None, point: str | None = None,
    stop: int | None = None, prestaged: bool = False, warehouse: str | None = None,
) -> None:
    """``prestaged``: each release is staged and then committed, as a pre-armed run does;
    ``warehouse``: the feed's tables there (an S3 URI), not under ``root``."""
    feed = Feed(crash_spec(root, warehouse), spark=spark, clock=far_future_clock())
    for i in range(start, len(STEPS) if stop is None else stop):
        print(f"step {i}", flush=True)
        if i == crash_step and point:
            os.environ[faults.ENV] = point
        try:
            kind, arg = STEPS[i]
            if kind == "ingest":
                write_partition(root, "a", arg)
                feed.ingest("a")
            elif prestaged:
                release_prestaged(spark, feed.spec, as_of_us=parse_instant(arg), clock=far_future_clock())
            else:
                feed.release(as_of=parse_instant(arg))
        finally:
            os.environ.pop(faults.ENV, None)


if __name__ == "__main__":
    from waterline.engine.spark.session import get_session

    root, crash_step, point = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    warehouse = sys.argv[4] if len(sys.argv) > 4 else None
    spark = get_session()
    if warehouse:
        from waterline.engine.delta import storage

        for key, value in storage.session_conf().items():
            spark.conf.set(key, value)
    run_steps(spark, root, crash_step, crash_step, point, stop=crash_step + 1,
              prestaged=point == faults.STAGED_BEFORE_COMMIT, warehouse=warehouse)
