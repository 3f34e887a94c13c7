"""`python -m bench`: one Spark session, every case in one run, a table and bench/results/latest.json.

Order of the run (one feed, one warehouse; W only moves forward):
  setup    generate every source partition (Parquet), untimed
  A        ingest the first backlog partition(s)          -> held has the small backlog
           plain-append warm-up
  1/4 (a)  ticks at the small backlog: ingest 10k due rows, time `release` (warm-up + reps),
           driver memory measured around each release; then the naive release (warm-up + reps)
  2        ingest the remaining backlog partitions (each a measured 1M-row ingest) and a
           plain Delta append of the same DataFrame after each, then the engine's duplicate-key
           check alone on it (append + check: the floor of any ingest that refuses duplicate
           keys before writing)  -> held has the large backlog;
           re-ingest of the last one, identical (warm-up + reps), asserts versions_written == 0
  1/4 (b)  ticks at the large backlog, naive release again
  3        release of D due versions vs a bare MERGE of the same D rows (warm-up + reps)
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from bench import feed as FEED
from bench.config import BenchConfig
from bench.naive import naive_release
from bench.probes import INGEST_PHASES, RELEASE_PHASES, DriverMemory, loadavg, median, spark_jobs, timed, track_jvm
from bench.report import build_rows, print_table

RESULTS = Path(__file__).with_name("results")


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Bench:
    def __init__(self, cfg: BenchConfig):
        from waterline import Feed
        from waterline.clock import FixedClock
        from waterline.engine.spark.config import SessionConfig
        from waterline.engine.spark.session import get_session

        self.cfg = cfg
        if cfg.workdir.exists():
            shutil.rmtree(cfg.workdir)
        cfg.workdir.mkdir(parents=True)
        self.spark = get_session(
            SessionConfig(app_name="waterline-bench", conf={"spark.driver.memory": cfg.driver_memory})
        )
        self.spec = FEED.make_spec(cfg.workdir)
        self.clock = FixedClock(0)
        # Whole ingests and releases go through the public API; the baselines below call
        # the engine's pieces (read_output, check_duplicates) they are measured against.
        self.feed = Feed(self.spec, spark=self.spark, clock=self.clock)
        self.mem = DriverMemory(self.spark)
        track_jvm(self.spark)
        self.plain_path = str(cfg.workdir / "plain_append")
        self.naive_path = str(cfg.workdir / "naive_tier")
        self.bare_path = str(cfg.workdir / "bare_merge_tier")
        self.out: dict = {"load": {"start": loadavg()}}

    # ---- engine calls -------------------------------------------------------------------------
    def ingest(self, day: str) -> dict:
        with spark_jobs(self.spark) as jobs, INGEST_PHASES.active() as phases, timed() as t:
            res = self.feed.ingest(day)
        return {"s": t["s"], "cpu_s": t["cpu_s"], "phases": _round(phases), "spark": jobs, "result": res.to_dict()}

    def release(self, w: int, *, memory: bool = False) -> dict:
        self.clock.set(w)
        mem: dict = {}
        if memory:
            with self.mem.measure() as mem, spark_jobs(self.spark) as jobs, RELEASE_PHASES.active() as phases, \
                    timed() as t:
                res = self.feed.release(as_of=w)
        else:
            with spark_jobs(self.spark) as jobs, RELEASE_PHASES.active() as phases, timed() as t:
                res = self.feed.release(as_of=w)
        tier = res.tiers[FEED.TIER].to_dict()
        return {"s": t["s"], "cpu_s": t["cpu_s"], "phases": _round(phases), "spark": jobs, "memory": mem,
                "tier": tier}

    # ---- baselines ----------------------------------------------------------------------------
    def plain_append(self, day: str) -> dict:
        from pyspark.sql import functions as F

        from waterline.engine.core import columns as C
        from waterline.engine.ingest.source import read_output

        with spark_jobs(self.spark) as jobs, timed() as t:
            df = read_output(self.spark, self.spec, day).withColumn(C.PARTITION, F.lit(day))
            df.write.format("delta").mode("append").partitionBy(C.PARTITION).save(self.plain_path)
        return {"s": t["s"], "cpu_s": t["cpu_s"], "spark": jobs}

    def duplicate_check(self, day: str) -> dict:
        """The engine's exact duplicate-key check alone, on the plain append's DataFrame."""
        from pyspark.sql import functions as F

        from waterline.engine.ingest.source import read_output
        from waterline.engine.ingest.validate import check_duplicates

        with spark_jobs(self.spark) as jobs, timed() as t:
            df = read_output(self.spark, self.spec, day)
            check_duplicates(self.spec, day, df.filter(F.col(FEED.KEY[0]).isNotNull()))
        return {"s": t["s"], "cpu_s": t["cpu_s"], "spark": jobs}

    def naive(self) -> dict:
        from waterline.engine.tables.feed_tables import FeedTables

        tables = FeedTables.open(self.spec)
        seq, w = tables.held_state().seq, tables.tier_state(FEED.TIER).w
        with spark_jobs(self.spark) as jobs, timed() as t:
            rows = naive_release(self.spark, self.spec, FEED.TIER, w, seq, self.naive_path)
        expected = self.spark.read.format("delta").load(self.spec.tier_path(FEED.TIER)).count()
        assert rows == expected, f"naive release disagrees with the engine: {rows} rows vs {expected}"
        return {"s": t["s"], "cpu_s": t["cpu_s"], "spark": jobs, "rows": rows}

    def bare_merge(self, day: str, seq: int) -> dict:
        """The unavoidable work of case 3: MERGE the same D rows, read from held, into a tier copy."""
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F

        from waterline.engine.core import columns as C
        from waterline.semantics import POS_INF

        with spark_jobs(self.spark) as jobs, timed() as t:
            held = self.spark.read.format("delta").load(self.spec.held_path)
            payload = [c for c in held.columns if not C.is_system(c)]
            src = held.filter((F.col(C.PARTITION) == day) & (F.col(C.SEQ) == seq)).select(
                *payload, C.PARTITION, C.SEQ,
                F.col(C.tau(FEED.TIER)).alias(C.START), F.lit(POS_INF).cast("bigint").alias(C.END),
            )
            on = " AND ".join(f"t.`{k}` = s.`{k}`" for k in FEED.KEY) + f" AND t.{C.PARTITION} = s.{C.PARTITION}"
            on += f" AND t.{C.PARTITION} = '{day}'"
            (
                DeltaTable.forPath(self.spark, self.bare_path).alias("t").merge(src.alias("s"), on)
                .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
            )
        return {"s": t["s"], "cpu_s": t["cpu_s"], "spark": jobs}

    # ---- helpers ------------------------------------------------------------------------------
    def held_files(self, w: int) -> dict:
        """Held table files, and how many Delta statistics cannot exclude for a tick at W."""
        from deltalake import DeltaTable

        from waterline.engine.core import columns as C

        import pyarrow as pa

        actions = pa.table(DeltaTable(self.spec.held_path).get_add_actions(flatten=True)).to_pydict()
        n = len(actions["path"])
        tau_min = actions.get(f"min.{C.tau(FEED.TIER)}", [None] * n)
        last_max = actions.get(f"max.{C.last(FEED.TIER)}", [None] * n)
        return {
            "files": n,
            "rows": int(sum(actions["num_records"])),
            "bytes": int(sum(actions["size_bytes"])),
            "files_tau_le_w": sum(1 for x in tau_min if x is None or x <= w),
            "files_last_gt_w": sum(1 for x in last_max if x is None or x > w),
        }

    def tick(self, day: str) -> dict:
        w = FEED.due_waterline(day)
        self.clock.set(w)
        ing = self.ingest(day)
        assert ing["result"]["versions_written"] == self.cfg.tick_rows, ing["result"]
        rel = self.release(w, memory=True)
        assert rel["tier"]["released"] == self.cfg.tick_rows, rel["tier"]
        rel["ingest_s"] = ing["s"]
        rel["load"] = loadavg()
        return rel


def _round(d: dict) -> dict:
    return {k: round(v, 3) for k, v in sorted(d.items(), key=lambda kv: -kv[1])}


def _plus(a: dict, b: dict) -> dict:
    """Two steps run back to back, as one sample."""
    return {"s": a["s"] + b["s"], "cpu_s": a["cpu_s"] + b["cpu_s"], "parts": [a, b]}


def _series(samples: list[dict], warmups: int = 1) -> dict:
    measured = samples[warmups:]
    return {
        "median_s": median([s["s"] for s in measured]),
        "median_cpu_s": median([s["cpu_s"] for s in measured]),
        "samples_s": [round(s["s"], 3) for s in measured],
        "warmup_s": [round(s["s"], 3) for s in samples[:warmups]],
        "runs": samples,
    }


def _git() -> dict:
    def run(*args):
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True, check=False).stdout.strip()
        except OSError:
            return None

    status = run("status", "--porcelain", "--", "plugin/waterline/engine")
    return {"commit": run("rev-parse", "HEAD"), "engine_dirty": bool(status)}


def main() -> int:
    cfg = BenchConfig.from_env()
    started = time.perf_counter()
    log(f"config: {cfg.to_dict()}")
    b = Bench(cfg)
    spark, out = b.spark, b.out
    out["git"] = _git()  # at the start: the engine code this run imports
    reps = cfg.reps
    n_small, n_large = b.cfg.backlog_partitions
    backlog_days = FEED.days("2031-01-01", n_large)
    tick_days = FEED.days("2026-01-01", 2 * (reps + 1))
    merge_days = FEED.days("2026-06-01", reps + 1)

    with timed() as t:
        for d in backlog_days:
            FEED.write_source(spark, cfg.workdir, d, cfg.ingest_rows)
        for d in tick_days:
            FEED.write_source(spark, cfg.workdir, d, cfg.tick_rows, files=1)
        for d in merge_days:
            FEED.write_source(spark, cfg.workdir, d, cfg.merge_rows)
    out["setup_sources_s"] = round(t["s"], 1)
    log(f"sources written in {t['s']:.1f}s")

    # A: the small backlog, through ingest (the first ingest is case 2's warm-up)
    b.clock.set(FEED.due_waterline(tick_days[0]))
    ingests, appends = [], []
    for d in backlog_days[:n_small]:
        ingests.append(b.ingest(d))
        log(f"backlog ingest {d}: {ingests[-1]['s']:.1f}s")
    appends.append(b.plain_append(backlog_days[0]))
    floors = [_plus(appends[-1], b.duplicate_check(backlog_days[0]))]
    log(f"plain append warm-up: {appends[-1]['s']:.1f}s")

    # 1/4 (a): ticks and naive at the small backlog
    def ticks_and_naive(days: list[str], label: str) -> tuple[list, list]:
        ticks = []
        for d in days:
            ticks.append(b.tick(d))
            r = ticks[-1]
            log(f"tick {label} {d}: release {r['s']:.2f}s (ingest {r['ingest_s']:.1f}s) "
                f"heap peak {r['memory']['heap_peak'] / 2**20:.0f} MiB spark {r['spark']} phases {r['phases']}")
        naive = []
        for _ in range(cfg.heavy_reps + 1):
            naive.append(b.naive())
            log(f"naive {label}: {naive[-1]['s']:.2f}s")
        return ticks, naive

    ticks_small, naive_small = ticks_and_naive(tick_days[: reps + 1], "small")
    files_small = b.held_files(FEED.due_waterline(tick_days[reps]))
    out["load"]["after_small_ticks"] = loadavg()

    # 2: the rest of the backlog; each partition is a measured ingest next to a plain append
    for d in backlog_days[n_small:]:
        ingests.append(b.ingest(d))
        appends.append(b.plain_append(d))
        floors.append(_plus(appends[-1], b.duplicate_check(d)))
        log(f"backlog ingest {d}: {ingests[-1]['s']:.1f}s, plain append {appends[-1]['s']:.1f}s "
            f"(+ duplicate check {floors[-1]['s'] - appends[-1]['s']:.1f}s) "
            f"spark {ingests[-1]['spark']} phases {ingests[-1]['phases']}")
    reingests = []
    for _ in range(cfg.heavy_reps + 1):
        r = b.ingest(backlog_days[-1])
        assert r["result"]["versions_written"] == 0 and r["result"]["seq"] is None, r["result"]
        reingests.append(r)
        log(f"re-ingest {backlog_days[-1]}: {r['s']:.1f}s spark {r['spark']} phases {r['phases']}")
    out["load"]["after_ingest"] = loadavg()

    # 1/4 (b): ticks and naive at the large backlog
    ticks_large, naive_large = ticks_and_naive(tick_days[reps + 1:], "large")
    files_large = b.held_files(FEED.due_waterline(tick_days[-1]))
    out["load"]["after_large_ticks"] = loadavg()

    # 3: D due versions: release vs bare MERGE of the same rows into a copy of the tier
    from waterline.engine.core import columns as C

    (spark.read.format("delta").load(b.spec.tier_path(FEED.TIER))
     .write.format("delta").partitionBy(C.PARTITION).save(b.bare_path))
    releases_d, merges_d = [], []
    for d in merge_days:
        w = FEED.due_waterline(d)
        b.clock.set(w)
        ing = b.ingest(d)
        assert ing["result"]["versions_written"] == cfg.merge_rows
        rel = b.release(w)
        assert rel["tier"]["released"] == cfg.merge_rows, rel["tier"]
        releases_d.append(rel)
        merges_d.append(b.bare_merge(d, ing["result"]["seq"]))
        log(f"D={cfg.merge_rows} {d}: release {rel['s']:.2f}s, bare merge {merges_d[-1]['s']:.2f}s "
            f"spark {rel['spark']} / {merges_d[-1]['spark']} phases {rel['phases']}")
    out["load"]["end"] = loadavg()

    n_warm = n_small  # ingests before the first measured one (the first creates the held table)
    out["cases"] = {
        "tick_small": _series(ticks_small) | {"backlog": files_small["rows"] - cfg.tick_rows * (reps + 1),
                                               "held_files": files_small},
        "tick_large": _series(ticks_large) | {"backlog": files_large["rows"] - cfg.tick_rows * 2 * (reps + 1),
                                               "held_files": files_large},
        "naive_small": _series(naive_small),
        "naive_large": _series(naive_large),
        "ingest": _series(ingests, warmups=n_warm),
        "plain_append": _series(appends),
        "append_and_duplicate_check": _series(floors),
        "reingest": _series(reingests),
        "release_d": _series(releases_d),
        "bare_merge_d": _series(merges_d),
    }
    out["memory"] = {
        label: {
            "heap_peak_bytes": median([r["memory"]["heap_peak"] for r in ticks[1:]]),
            "heap_peak_max_bytes": max(r["memory"]["heap_peak"] for r in ticks[1:]),
            "old_gen_peak_bytes": median([r["memory"]["old_gen_peak"] for r in ticks[1:]]),
            "heap_live_before_bytes": median([r["memory"]["heap_live_before"] for r in ticks[1:]]),
            "rss_peak_bytes": median([(r["memory"]["rss_peak"] or 0) for r in ticks[1:]]),
            "rss_peak_max_bytes": max((r["memory"]["rss_peak"] or 0) for r in ticks[1:]),
            "rss_growth_bytes": max((r["memory"]["rss_growth"] or 0) for r in ticks[1:]),
        }
        for label, ticks in (("small", ticks_small), ("large", ticks_large))
    }
    out["config"] = cfg.to_dict()
    out["backlog_built_by"] = "waterline.Feed.ingest of whole partitions (no direct table writes)"
    out["machine"] = {"cpus": __import__("os").cpu_count(), "python": platform.python_version(),
                      "spark": spark.version, "master": spark.sparkContext.master}
    out["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    out["total_s"] = round(time.perf_counter() - started, 1)
    out["rows"] = build_rows(out)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.json").write_text(json.dumps(out, indent=2, default=str))
    print_table(out)
    spark.stop()
    if not cfg.keep:
        shutil.rmtree(cfg.workdir, ignore_errors=True)
    return 0
