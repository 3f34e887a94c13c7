"""`python -m bench.connect`: the Spark Connect case, in its own process (no JVM here).

Starts a Connect server (`waterline.local.cluster`, Delta jars, local[2]) on a
free loopback port, then over one Connect session, at a smaller scale than the
main bench (WATERLINE_BENCH_CONNECT_ROWS, default 100k rows per partition):

  start    client session start + first query (vs a classic session's start, measured
           in a subprocess: the JVM start Connect avoids)
  ingest   waterline ingest of one partition  vs  a plain Delta append of the same output
  tick     release with nothing due            vs  a plain `SELECT count(*)` of the tier
  release  release of every due version (D)    vs  a bare SQL MERGE of the same D rows
Ratios = waterline / plain, both through the same Connect server. Results go to
bench/results/connect.json and a printed table.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import feed as FEED

RESULTS = Path(__file__).with_name("results")
_CLASSIC_START = (
    "import time; t = time.monotonic(); from waterline.engine.spark.session import get_session; "
    "s = get_session(); s.sql('SELECT 1').collect(); print(time.monotonic() - t)"
)


def _timed(fn) -> float:
    started = time.monotonic()
    fn()
    return time.monotonic() - started


def main() -> int:
    from waterline import Feed
    from waterline.clock import FixedClock
    from waterline.engine.core.sqltext import delta_path
    from waterline.engine.spark.config import SessionConfig
    from waterline.local import cluster
    from waterline.engine.spark.session import get_session
    from waterline.engine.spark.views import temp_view

    rows = int(os.environ.get("WATERLINE_BENCH_CONNECT_ROWS", "100000"))
    reps = max(1, int(os.environ.get("WATERLINE_BENCH_REPS", "3")))
    work = Path(tempfile.mkdtemp(prefix="wl-bench-connect-"))
    state = cluster.start(work / "spark", workers=0, connect=True)
    out: dict = {"rows": rows, "reps": reps}
    try:
        # The classic start first, while this process is not yet a Connect client (pyspark
        # marks the environment, SPARK_CONNECT_MODE_ENABLED, once it is).
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("WATERLINE_SPARK_", "SPARK_REMOTE", "SPARK_CONNECT_MODE"))}
        classic = subprocess.run([sys.executable, "-c", _CLASSIC_START], capture_output=True, text=True, env=env)
        if classic.returncode != 0 or not classic.stdout.strip():
            raise SystemExit(f"classic session start failed: {classic.stderr[-2000:]}")
        out["classic_start_s"] = float(classic.stdout.strip().splitlines()[-1])
        started = time.monotonic()
        spark = get_session(SessionConfig(remote=state.connect_url))
        spark.sql("SELECT 1").collect()
        out["client_start_s"] = time.monotonic() - started

        spec = FEED.make_spec(work)
        feed = Feed(spec, spark=spark, clock=FixedClock(4_000_000_000_000_000))
        days = FEED.days("2026-01-05", reps + 1)
        for day in days:
            FEED.write_source(spark, work, day, rows)
        ingest_s, append_s, release_s, merge_s, tick_s, count_s = [], [], [], [], [], []
        for i, day in enumerate(days):
            ingest_s.append(_timed(lambda: feed.ingest(day)))
            output = spark.read.parquet(str(work / "src" / day))
            append_s.append(_timed(lambda: output.write.format("delta").mode("append").save(str(work / "plain"))))
            w = FEED.due_waterline(day)
            release_s.append(_timed(lambda: feed.release(as_of=w)))
            tick_s.append(_timed(lambda: feed.release(as_of=w + 1)))
            count_s.append(_timed(lambda: spark.sql(f"SELECT count(*) FROM {delta_path(spec.tier_path(FEED.TIER))}").collect()))

            def bare_merge():
                with temp_view(output) as source:
                    spark.sql(f"MERGE INTO {delta_path(str(work / 'bare'))} AS t USING {source} AS s ON t.id = s.id "
                              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")

            if i == 0:
                output.limit(0).write.format("delta").save(str(work / "bare"))
            merge_s.append(_timed(bare_merge))
        measured = slice(1, None)  # the first day is the warm-up
        med = {name: statistics.median(values[measured]) for name, values in {
            "ingest": ingest_s, "append": append_s, "release": release_s, "merge": merge_s,
            "tick": tick_s, "count": count_s}.items()}
        out.update({f"{k}_s": v for k, v in med.items()})
        out["ratios"] = {"ingest": med["ingest"] / med["append"], "release": med["release"] / med["merge"],
                         "tick": med["tick"] / med["count"]}
        spark.stop()
    finally:
        cluster.stop(work / "spark")
        shutil.rmtree(work, ignore_errors=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "connect.json").write_text(json.dumps(out, indent=2))
    print(f"Spark Connect case ({rows} rows per partition, median of {reps}):")
    print(f"  client start {out['client_start_s']:.1f}s   classic session start {out['classic_start_s']:.1f}s")
    for case, (mine, plain) in {"ingest": ("ingest", "append"), "release": ("release", "merge"),
                                "tick": ("tick", "count")}.items():
        print(f"  {case:8} waterline {med[mine]:6.2f}s   plain {med[plain]:6.2f}s   ratio {out['ratios'][case]:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
