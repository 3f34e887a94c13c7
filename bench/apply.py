"""`python -m bench.apply`: what `waterline apply` costs on a live feed, against plain Delta.

An apply that changes a policy (or adds a tier) recomputes held's schedule columns for
every held version in one overwrite of held (docs/operations.md, "A changed policy"). Its
floor is reading held and writing it back: the baseline here is a plain Delta overwrite of
the same rows (held read, written to another folder). For each held size (two sizes, so
the scaling shows) and each kind of change, in one Spark session:

  policy    apply of a changed delay (1 h <-> 2 h, alternating)  vs  plain overwrite of held
  release   the next release, which reconciles every row of the rescheduled tier
            vs  a plain overwrite of the tier table (its rows read and written back)
  new tier  apply that adds a tier (reschedule + its first build at W)  vs  plain overwrite
  column    apply that adds a nullable column (one metaData commit per table, no Spark)

Medians of REPS after one warm-up. Scale: WATERLINE_BENCH_APPLY_ROWS (the larger held
size, default 1M; the smaller is a tenth), WATERLINE_BENCH_APPLY_REPS (3). Prints a table;
``--json`` prints the measurements too.
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

HOUR = "event_time + INTERVAL 1 HOUR <= WATERLINE()"
TWO_HOURS = "event_time + INTERVAL 2 HOURS <= WATERLINE()"


def log(msg: str) -> None:
    print(f"[bench.apply {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class LiveFeed:
    """The bench feed with ``rows`` held versions, every one released to its tier."""

    def __init__(self, spark, root: Path, rows: int) -> None:
        from waterline.clock import FixedClock

        self.spark, self.root, self.rows = spark, root, rows
        self.base = FEED.make_spec(root).to_dict()
        self.clock = FixedClock(0)
        self.tiers = {FEED.TIER: HOUR}
        self.columns: list[str] = []
        self.day = "2026-01-01"
        FEED.write_source(spark, root, self.day, rows)
        self.w = FEED.due_waterline(self.day)
        self.clock.set(self.w)
        feed = self.feed()
        feed.ingest(self.day)
        feed.release(as_of=self.w)

    def feed(self):
        from waterline import Feed
        from waterline.spec import spec_from_dict

        data = dict(self.base, tiers=dict(self.tiers))
        if self.columns:
            extra = ", ".join(f"CAST(NULL AS STRING) AS {c}" for c in self.columns)
            data["transform"] = FEED.TRANSFORM.replace(" FROM source", f", {extra} FROM source")
        return Feed(spec_from_dict(data, base_dir=self.root), spark=self.spark, clock=self.clock)

    def apply(self) -> dict:
        self.w += 60_000_000  # an apply at a later instant each time
        self.clock.set(self.w)
        feed = self.feed()
        with timed() as t:
            version, diff = feed.apply()
        assert diff, "the bench's apply changed nothing"
        return {"s": t["s"], "cpu_s": t["cpu_s"], "version": version.version}

    def release(self) -> dict:
        self.w += 60_000_000
        self.clock.set(self.w)
        with timed() as t:
            self.feed().release(as_of=self.w)
        return {"s": t["s"], "cpu_s": t["cpu_s"]}

    def plain_overwrite(self, path: str) -> dict:
        """The table at ``path`` read and written back whole with plain Delta, into another
        folder (held: the floor of a reschedule; the tier: of a release that reconciles it)."""
        table = self.spark.read.format("delta").load(path)
        target = str(self.root / "plain_overwrite")
        with timed() as t:
            table.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(target)
        return {"s": t["s"], "cpu_s": t["cpu_s"]}


def measure(spark, root: Path, rows: int, reps: int) -> dict:
    live = LiveFeed(spark, root, rows)
    out: dict = {"policy": [], "release": [], "plain_tier": [], "tier": [], "column": [], "plain": []}
    spec = live.feed().spec
    for i in range(reps + 1):
        out["plain"].append(live.plain_overwrite(spec.held_path))
        out["plain_tier"].append(live.plain_overwrite(spec.tier_path(FEED.TIER)))
        live.tiers[FEED.TIER] = TWO_HOURS if i % 2 == 0 else HOUR
        out["policy"].append(live.apply())
        out["release"].append(live.release())
        live.tiers[f"added_{i}"] = HOUR
        out["tier"].append(live.apply())
        live.columns.append(f"added_col_{i}")
        out["column"].append(live.apply())
        log(f"{rows} rows, round {i}: policy {out['policy'][-1]['s']:.2f}s, plain {out['plain'][-1]['s']:.2f}s, "
            f"tier {out['tier'][-1]['s']:.2f}s, column {out['column'][-1]['s']:.3f}s")
    return {k: {"median_s": median([x["s"] for x in v[1:]]), "median_cpu_s": median([x["cpu_s"] for x in v[1:]]),
                "samples_s": [round(x["s"], 3) for x in v]} for k, v in out.items()}


def main(argv: list[str]) -> int:
    from waterline.engine.spark.config import SessionConfig
    from waterline.engine.spark.session import get_session

    large = int(os.environ.get("WATERLINE_BENCH_APPLY_ROWS", "1000000"))
    reps = max(1, int(os.environ.get("WATERLINE_BENCH_APPLY_REPS", "3")))
    sizes = (max(1000, large // 10), large)
    work = Path(tempfile.mkdtemp(prefix="wl-bench-apply-"))
    started = time.perf_counter()
    result: dict = {"reps": reps, "load": {"start": loadavg()}, "sizes": {}}
    spark = get_session(SessionConfig(app_name="waterline-bench-apply", conf={"spark.driver.memory": "6g"}))
    try:
        for rows in sizes:
            result["sizes"][rows] = measure(spark, work / f"held_{rows}", rows, reps)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    result["load"]["end"] = loadavg()
    result["total_s"] = round(time.perf_counter() - started, 1)
    _print(result)
    if "--json" in argv:
        print(json.dumps(result, indent=2))
    return 0


def _print(result: dict) -> None:
    cases = (("apply: changed delay", "policy", "plain", "plain overwrite of held"),
             ("next release (reconciles)", "release", "plain_tier", "plain overwrite of the tier"),
             ("apply: new tier", "tier", "plain", "plain overwrite of held"),
             ("apply: new column", "column", None, ""))
    print(f"\nwaterline apply on a live feed (median of {result['reps']} after a warm-up; wall s, CPU s of the driver)")
    print(f"{'held rows':>10}  {'case':<27}{'apply s':>9}{'cpu s':>8}{'baseline s':>12}{'ratio':>8}  baseline")
    for rows, m in result["sizes"].items():
        for name, case, base, what in cases:
            e, b = m[case]["median_s"], (m[base]["median_s"] if base else None)
            ratio = f"{e / b:>7.2f}x" if b else f"{'':>8}"
            base_s = f"{b:>11.2f}s" if b else f"{'':>12}"
            print(f"{rows:>10}  {name:<27}{e:>8.2f}s{m[case]['median_cpu_s']:>7.2f}s{base_s}{ratio}  {what}")
    print(f"total {result['total_s']}s, load {result['load']}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
