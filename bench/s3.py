"""`python -m bench.s3`: the engine against plain Delta on the same backend, local disk and s3proxy.

For each backend (a local folder, then an ``s3a://`` warehouse on s3proxy started
here on loopback) and the same source partitions (local Parquet):

  ingest   waterline ingest of one partition (INGEST rows, all new)
           vs a plain Delta append of the same output DataFrame
  tick     ingest TICK due rows + release, timed release only,
           vs a bare MERGE of the same rows into a copy of the tier
  release  release of D due versions vs a bare MERGE of the same D rows

Each ratio is engine / plain on that backend (median of REPS after a warm-up; with 3, one
slow sample, such as the first run of a path the warm-up did not take, cannot set it).
Scale: WATERLINE_BENCH_S3_ROWS (ingest rows, default 100k), WATERLINE_BENCH_S3_REPS (3).
Writes bench/results/s3.json and prints a table.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench import feed as FEED
from bench.probes import loadavg, median, timed

RESULTS = Path(__file__).with_name("results")


def log(msg: str) -> None:
    print(f"[bench.s3 {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Backend:
    """One warehouse (local folder or s3a:// URI) with the bench feed and its baselines."""

    def __init__(self, spark, name: str, src_root: Path, warehouse: str):
        from waterline import Feed
        from waterline.clock import FixedClock
        from waterline.spec import spec_from_dict

        self.spark, self.name = spark, name
        data = FEED.make_spec(src_root).to_dict()
        data["warehouse"] = warehouse
        self.spec = spec_from_dict(data, base_dir=src_root)
        self.clock = FixedClock(0)
        self.feed = Feed(self.spec, spark=spark, clock=self.clock)  # ingest and release: the public API
        self.plain_path = f"{warehouse.rstrip('/')}/plain_append"
        self.bare_path = f"{warehouse.rstrip('/')}/bare_merge_tier"

    def ingest(self, day: str) -> tuple[float, object]:
        with timed() as t:
            res = self.feed.ingest(day)
        return t["s"], res

    def release(self, w: int) -> float:
        self.clock.set(w)
        with timed() as t:
            self.feed.release(as_of=w)
        return t["s"]

    def plain_append(self, day: str) -> float:
        from pyspark.sql import functions as F

        from waterline.engine.core import columns as C
        from waterline.engine.ingest.source import read_output

        with timed() as t:
            df = read_output(self.spark, self.spec, day).withColumn(C.PARTITION, F.lit(day))
            df.write.format("delta").mode("append").partitionBy(C.PARTITION).save(self.plain_path)
        return t["s"]

    def bare_merge(self, day: str, seq: int) -> float:
        """MERGE the rows ingest `seq` wrote for `day`, read from held, into a copy of the tier (SQL)."""
        from waterline.engine.core import columns as C
        from waterline.semantics import POS_INF

        held = self.spark.read.format("delta").load(self.spec.held_path)
        payload = ", ".join(f"`{c}`" for c in held.columns if not C.is_system(c))
        self.spark.read.format("delta").load(self.spec.held_path).createOrReplaceTempView("wl_bench_held")
        key = FEED.KEY[0]
        with timed() as t:
            self.spark.sql(f"""
                MERGE INTO delta.`{self.bare_path}` t
                USING (SELECT {payload}, {C.PARTITION}, {C.SEQ}, `{C.tau(FEED.TIER)}` AS {C.START},
                              CAST({POS_INF} AS BIGINT) AS {C.END}
                       FROM wl_bench_held WHERE {C.PARTITION} = '{day}' AND {C.SEQ} = {seq}) s
                ON t.`{key}` = s.`{key}` AND t.{C.PARTITION} = s.{C.PARTITION} AND t.{C.PARTITION} = '{day}'
                WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
        return t["s"]

    def copy_tier(self) -> None:
        from waterline.engine.core import columns as C

        (self.spark.read.format("delta").load(self.spec.tier_path(FEED.TIER)).limit(0)
         .write.format("delta").partitionBy(C.PARTITION).save(self.bare_path))


def run_backend(b: Backend, ingest_days, tick_days, merge_days, rows: dict) -> dict:
    out: dict = {"ingest": [], "append": [], "tick": [], "tick_merge": [], "release": [], "release_merge": []}
    for i, d in enumerate(ingest_days):
        b.clock.set(FEED.due_waterline(tick_days[0]) - 10 * FEED.DAY_US)
        s, res = b.ingest(d)
        assert res.versions_written == rows["ingest"], res
        out["ingest"].append(s)
        out["append"].append(b.plain_append(d))
        log(f"{b.name} ingest {d}: {s:.2f}s, plain append {out['append'][-1]:.2f}s")
        if i == 0:
            b.release(FEED.due_waterline(tick_days[0]) - 10 * FEED.DAY_US)  # creates the tier tables
            b.copy_tier()
    for kind, days_, n in (("tick", tick_days, rows["tick"]), ("release", merge_days, rows["merge"])):
        for d in days_:
            w = FEED.due_waterline(d)
            b.clock.set(w)
            _, res = b.ingest(d)
            assert res.versions_written == n, res
            out[kind].append(b.release(w))
            out[f"{kind}_merge"].append(b.bare_merge(d, res.seq))
            log(f"{b.name} {kind} {d}: release {out[kind][-1]:.2f}s, bare merge {out[f'{kind}_merge'][-1]:.2f}s")
    summary = {}
    for case, engine, plain in (("ingest", "ingest", "append"), ("tick", "tick", "tick_merge"),
                                ("release", "release", "release_merge")):
        e, p = median(out[engine][1:]), median(out[plain][1:])  # first sample is the warm-up
        summary[case] = {"engine_s": round(e, 3), "plain_s": round(p, 3), "ratio": round(e / p, 2),
                         "engine_samples_s": [round(x, 3) for x in out[engine]],
                         "plain_samples_s": [round(x, 3) for x in out[plain]]}
    return summary


def main() -> int:
    from tests.s3proxy import S3Proxy, restore_env, set_env

    rows = {"ingest": int(os.environ.get("WATERLINE_BENCH_S3_ROWS", "100000")), "tick": 1000, "merge": 10000}
    reps = max(1, int(os.environ.get("WATERLINE_BENCH_S3_REPS", "3")))
    work = Path(tempfile.mkdtemp(prefix="wl-bench-s3-"))
    proxy = S3Proxy.start(work / "s3proxy")
    saved = set_env(proxy.env)  # before the session starts: its s3a conf comes from these
    started = time.perf_counter()
    try:
        from waterline.engine.spark.config import SessionConfig
        from waterline.engine.spark.session import get_session

        spark = get_session(SessionConfig(app_name="waterline-bench-s3"))
        ingest_days = FEED.days("2031-01-01", reps + 1)
        tick_days = FEED.days("2026-01-01", reps + 1)
        merge_days = FEED.days("2026-06-01", reps + 1)
        src = work / "src-root"
        for d in ingest_days:
            FEED.write_source(spark, src, d, rows["ingest"])
        for d in tick_days:
            FEED.write_source(spark, src, d, rows["tick"], files=1)
        for d in merge_days:
            FEED.write_source(spark, src, d, rows["merge"])
        out = {"rows": rows, "reps": reps, "load": {"start": loadavg()}, "backends": {}}
        for name, warehouse in (("local", str(work / "wh")), ("s3proxy", proxy.uri("wh"))):
            out["backends"][name] = run_backend(Backend(spark, name, src, warehouse),
                                                ingest_days, tick_days, merge_days, rows)
        out["load"]["end"] = loadavg()
        out["total_s"] = round(time.perf_counter() - started, 1)
        spark.stop()
    finally:
        restore_env(saved)
        proxy.stop()
        shutil.rmtree(work, ignore_errors=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "s3.json").write_text(json.dumps(out, indent=2))
    print(f"\nengine / plain Delta on the same backend (median of {reps} after a warm-up; "
          f"ingest {rows['ingest']} rows, tick {rows['tick']}, release D={rows['merge']})")
    print(f"{'case':<10}" + "".join(f"{n + ' engine':>16}{n + ' plain':>16}{n + ' ratio':>14}" for n in out["backends"]))
    for case in ("tick", "ingest", "release"):
        cells = "".join(f"{v[case]['engine_s']:>15.2f}s{v[case]['plain_s']:>15.2f}s{v[case]['ratio']:>13.2f}x"
                        for v in out["backends"].values())
        print(f"{case:<10}{cells}")
    print(f"total {out['total_s']}s, load {out['load']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
