"""A live feed whose spec changes (a tier added, a delay shortened), runnable in a subprocess
that may be killed mid-apply (issue 56).

``python -m tests.engine.apply_crash_driver ROOT POINT`` applies the changed spec on a
warehouse that went through `before_apply`, with the crash point armed
(`waterline.engine.core.faults`); the test prepares and recovers in-process.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.engine.feedkit import far_future_clock, make_spec, write_partition
from waterline import Feed
from waterline.clock import parse_instant
from waterline.engine.core import faults

BEFORE = {"rt": "TRUE", "d15": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"}
AFTER = {"rt": "TRUE", "d15": "event_time + INTERVAL 10 MINUTES <= WATERLINE()",
         "d20": "event_time + INTERVAL 20 MINUTES <= WATERLINE()"}
V1 = [{"id": i, "event_time": f"2026-01-01 10:{i * 5:02d}:00", "status": "final", "v": "a"} for i in range(8)]
V2 = [dict(r, v="b") if r["id"] % 3 == 0 else r for r in V1 if r["id"] != 5]


def feed(spark, root: Path, tiers) -> Feed:
    return Feed(make_spec(root, tiers), spark=spark, clock=far_future_clock())


def before_apply(spark, root: Path) -> None:
    """Two ingests and releases under the first spec."""
    old = feed(spark, root, BEFORE)
    for rows, w in ((V1, "10:20"), (V2, "10:40")):
        write_partition(root, "a", rows)
        old.ingest("a")
        old.release(as_of=parse_instant(f"2026-01-01T{w}:00Z"))


def apply(spark, root: Path, point: str | None = None) -> None:
    if point:
        os.environ[faults.ENV] = point
    try:
        feed(spark, root, AFTER).apply()
    finally:
        os.environ.pop(faults.ENV, None)


def after_apply(spark, root: Path) -> None:
    """A revision and two releases under the applied spec."""
    new = feed(spark, root, AFTER)
    write_partition(root, "a", V2 + [{"id": 9, "event_time": "2026-01-01 10:38:00", "status": "final", "v": "n"}])
    new.ingest("a")
    for w in ("10:40", "10:55"):
        new.release(as_of=parse_instant(f"2026-01-01T{w}:00Z"))


if __name__ == "__main__":
    from waterline.engine.spark.session import get_session

    apply(get_session(), Path(sys.argv[1]), sys.argv[2])
