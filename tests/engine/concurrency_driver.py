"""One of several drivers ingesting and releasing ONE feed at once (a separate Spark driver).

``python -m tests.engine.concurrency_driver ROOT WAREHOUSE PARTITION SEED OPS`` runs OPS
random operations: an ingest of its own partition (a new random output) or a release
at a random waterline. Every ingested output is printed as one JSON line, in order,
so the test can rebuild the model of that partition.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from tests.engine.feedkit import far_future_clock, make_spec, write_partition
from tests.engine.model import MINUTE, POLICIES
from waterline.errors import TransientError

BASE_US = 1_767_261_600_000_000  # 2026-01-01T10:00:00Z
TIERS = {t: POLICIES[t] for t in ("d10", "win", "mixed")}
KEYS = 5


def spec_for(root: Path, warehouse: str):
    return make_spec(root, TIERS, warehouse=warehouse)


def random_output(rng: random.Random, partition: str) -> list[dict]:
    from waterline.clock import format_instant

    def iso(us):
        return format_instant(us).replace("T", " ").rstrip("Z")

    return [
        {"id": k, "event_time": iso(BASE_US + rng.randrange(0, 120) * MINUTE),
         "status": rng.choice(["final", "prelim"]), "embargo_until": None, "v": rng.choice("xyz")}
        for k in range(KEYS) if rng.random() < 0.8
    ]


#: Runs of one operation a driver makes when it ends in a TransientError, as a scheduler's retries would.
ATTEMPTS = 3


def run_retrying(operation):
    """``operation()``, run again after a `TransientError` (a lease lost to a paused heartbeat
    on a loaded machine, a busy lease, lost commit races): such a run committed nothing it
    would not commit again, so re-running it is what Dagster and Airflow do too."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return operation()
        except TransientError as exc:
            if attempt == ATTEMPTS:
                raise
            print(json.dumps({"transient": str(exc), "attempt": attempt}), file=sys.stderr, flush=True)


def main(root: Path, warehouse: str, partition: str, seed: int, ops: int) -> None:
    from waterline import Feed
    from waterline.engine.spark.config import SessionConfig
    from waterline.engine.spark.session import get_session

    spark = get_session(SessionConfig(master="local[1]", conf={"spark.driver.memory": "640m"}))
    feed = Feed(spec_for(root, warehouse), spark=spark, clock=far_future_clock())
    rng = random.Random(seed)
    for _ in range(ops):
        if rng.random() < 0.5:
            rows = random_output(rng, partition)
            write_partition(root, partition, rows)
            result = run_retrying(lambda: feed.ingest(partition))
            print(json.dumps({"op": "ingest", "rows": rows, "seq": result.seq}), flush=True)
        else:
            as_of = BASE_US + rng.randrange(0, 150) * MINUTE
            result = run_retrying(lambda: feed.release(as_of=as_of))
            print(json.dumps({"op": "release", "as_of": as_of, "w": result.w_us}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
