"""A user's first feed, run by an installed wheel outside the checkout (tests/packaging).

Writes a day of three trades and a spec into the working directory, then plans, ingests,
releases and reads through `waterline.Feed`, printing one JSON line of what it saw and how
long the first Spark start took.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import waterline

SPEC = """
feed: trades
warehouse: warehouse
source:
  format: json
  path: data/{partition}/
  options: {schema: "id BIGINT, ts STRING, price DOUBLE"}
partitions: {daily: {start: 2026-01-05}}
transform: SELECT id, price, CAST(ts AS TIMESTAMP) AS event_time FROM source
key: [id]
event_time: event_time
tiers:
  realtime: "TRUE"
  delayed_15m: "event_time + INTERVAL 15 MINUTES <= WATERLINE()"
"""


def main() -> None:
    day = Path("data/2026-01-05")
    day.mkdir(parents=True, exist_ok=True)
    (day / "part-0.json").write_text(
        '{"id": 1, "ts": "2026-01-05T10:00:00", "price": 10.0}\n'
        '{"id": 2, "ts": "2026-01-05T10:10:00", "price": 10.5}\n'
        '{"id": 3, "ts": "2026-01-05T10:50:00", "price": 11.0}\n'
    )
    Path("trades.yaml").write_text(SPEC)
    feed = waterline.load("trades.yaml")
    plan = feed.plan().describe()
    started = time.monotonic()
    ingested = feed.ingest("2026-01-05")
    first_start_s = time.monotonic() - started
    feed.release(as_of="2026-01-05T11:00:00Z")
    rows = {tier: sorted(feed.read(tier).column("id").to_pylist()) for tier in ("realtime", "delayed_15m")}
    # waterline's own classes (the wheel's jar) are on the session's classpath
    utils = feed.spark.sparkContext._jvm.org.apache.spark.util.Utils
    classes = [utils.classForName(name, True, False).getName()
               for name in ("dev.waterline.spark.AttemptFolderCommitter", "dev.waterline.spark.ConditionalS3LogStore")]
    jars = feed.spark.conf.get("spark.jars", "")
    json.dump({"version": waterline.__version__, "module": waterline.__file__, "plan": plan,
               "ingest": ingested.summary(), "rows": rows, "classes": classes, "jars": jars.split(","),
               "first_ingest_s": round(first_start_s, 1)}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
