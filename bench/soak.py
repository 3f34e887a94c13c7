"""A feed's whole life, compressed: a day of one-minute releases (`.venv/bin/python -m bench.soak`).

Waterline commits once per tier per release, and every release adds small files. Left alone,
a tier read after a day of one-minute releases would open hundreds of files and replay a long
log; `Feed.maintain` (compaction, vacuum, checkpoint, log cleanup) is what keeps it flat. This
bench checks that it does: the costs of the last hour of a day must be close to the first's.

The feed: hourly Parquet partitions (``--rows-per-minute`` rows per simulated minute, event
times spread over the hour), key ``id``, tiers ``realtime: TRUE``, ``delayed_15m`` and
``last_1h`` (a rolling hour: rows expire, so releases rewrite and remove files too), the
audience ``acme`` reading both over Delta Sharing, ``maintenance: {time_travel: 1 hour,
every: 1 hour}``. Simulated time starts at 2026-01-01T00:00Z; per simulated hour it writes
that hour's source partition and ingests it, then releases once per minute (``as_of`` = that
minute; W is chosen by as_of, the trusted clock is far in the future) and runs `maintain`
every ``--maintain-every-minutes`` (0: never, the feed left alone, to compare). After each
hour it records, per tier, the files of the current snapshot, the files on disk outside the
log and the ``_delta_log`` folder's files and bytes; in hours 0, 1 and the last (and every
``--probe-every`` hours) it also times `status` (median of 5), `read("last_1h")` (median of
5) and a subscriber's ``delta_sharing.load_as_pandas`` of ``last_1h`` (median of 3) against
a sharing server in this process on 127.0.0.1.

The table compares hour 1, the first whose rolling hour is full (hour 0 also pays the JVM's
first queries), with the last: release p50, status, read and load_as_pandas should stay
within 1.2x. ``last_1h`` holds the same number of rows in both, so what its reads cost more is
what files and the log add. Vacuum and log cleanup go by wall-clock age (file times and
commit timestamps), not by the simulated clock: a run shorter than ``time_travel`` in wall time
leaves every removed file and every log file in place. So at the end of each simulated hour
the bench sets the modification time of every file of the feed's tables back by an hour (as
`tests/engine/test_maintain.py` does): a file's age is then its age in simulated time, and
vacuum and log cleanup act as they would over a real day (``--wall-clock``: no aging).

Usage: python -m bench.soak [--hours 24] [--rows-per-minute 60] [--maintain-every-minutes 60]
       [--probe-every 0] [--wall-clock] [--workdir DIR] [--keep] [--json] [--progress FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.probes import loadavg, median

FEED = "soak"
START = datetime(2026, 1, 1, tzinfo=UTC)
START_US = int(START.timestamp()) * 1_000_000
MINUTE_US = 60_000_000
HOUR_US = 60 * MINUTE_US
TIERS = {"realtime": "TRUE", "delayed_15m": "event_time + INTERVAL 15 MINUTES <= WATERLINE()",
         "last_1h": "event_time <= WATERLINE() AND WATERLINE() < event_time + INTERVAL 1 HOUR"}
DELAY_US = 15 * MINUTE_US
# The tier read and shared: a rolling hour holds the same number of rows from the second hour
# on, so its read cost shows what files and the log add, not how many rows the day brought.
SHARED = "last_1h"
AUDIENCES = {"acme": ["delayed_15m", SHARED]}
BASELINE_HOUR = 1  # the first hour whose rolling window is full
TIME_TRAVEL_S = 3600
TARGET = 1.2  # last hour / first hour, for the timed operations
TIMED = {"release_p50_ms": "release p50 ms", "status_ms": "status ms", "read_ms": f"read {SHARED} ms",
         "load_as_pandas_ms": "subscriber load_as_pandas ms"}
SIZES = {"snapshot_files": "snapshot files", "disk_files": "files on disk (not the log)",
         "log_files": "_delta_log files", "log_bytes": "_delta_log bytes"}


def log(msg: str) -> None:
    print(f"[bench.soak {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- the feed and its source ------------------------------------------------------------------


def make_spec(root: Path, *, tiers: dict[str, str] | None = None, time_travel_s: int = TIME_TRAVEL_S,
              audiences: dict[str, list[str]] | None = None):
    """The soak feed under ``root`` (``tiers``, ``audiences``: default all of them)."""
    from waterline.spec import spec_from_dict

    return spec_from_dict({
        "feed": FEED,
        "warehouse": str(root / "wh"),
        "source": {"format": "parquet", "path": str(root / "src") + "/{date}/{hour}/"},
        "partitions": {"hourly": {"start": START.strftime("%Y-%m-%dT%H:00")}},
        "transform": "SELECT id, v, event_time FROM source",
        "key": ["id"],
        "event_time": "event_time",
        "tiers": dict(TIERS if tiers is None else tiers),
        **({} if audiences == {} else {"audiences": {r: list(t) for r, t in (audiences or AUDIENCES).items()}}),
        "maintenance": {"time_travel": f"{time_travel_s // 3600} hours", "every": "1 hour"},
    }, base_dir=root)


def hour_key(hour: int) -> str:
    """The hourly partition key (``YYYY-MM-DD-HH:00``) of simulated hour ``hour``."""
    return (START + timedelta(hours=hour)).strftime("%Y-%m-%d-%H:00")


def write_hour(spark, spec, hour: int, rows_per_hour: int) -> None:
    """``rows_per_hour`` rows with ids unique over the feed, event times spread over the hour."""
    from pyspark.sql import functions as F

    first, step = hour * rows_per_hour, HOUR_US // rows_per_hour
    df = spark.range(first, first + rows_per_hour, numPartitions=1).select(
        F.col("id"),
        F.concat(F.lit("v"), F.col("id").cast("string")).alias("v"),
        F.timestamp_micros(F.lit(START_US + hour * HOUR_US) + (F.col("id") - first) * step).alias("event_time"),
    )
    df.write.mode("overwrite").parquet(spec.source_path("source", hour_key(hour)))


def expected_rows(hours: int, rows_per_hour: int, w_us: int) -> dict[str, int]:
    """Rows each tier should hold at W = ``w_us`` after ``hours`` hours were ingested."""
    step = HOUR_US // rows_per_hour
    events = [START_US + h * HOUR_US + i * step for h in range(hours) for i in range(rows_per_hour)]
    return {"realtime": len(events), "delayed_15m": sum(1 for e in events if e + DELAY_US <= w_us),
            SHARED: sum(1 for e in events if e <= w_us < e + HOUR_US)}


# -- measurements -----------------------------------------------------------------------------


def median_ms(fn: Callable[[], Any], times: int) -> tuple[float, Any]:
    """The median wall time of ``times`` calls of ``fn`` (ms), and the last call's result."""
    spent, result = [], None
    for _ in range(times):
        t0 = time.perf_counter()
        result = fn()
        spent.append((time.perf_counter() - t0) * 1000)
    return round(median(spent), 2), result


def table_sizes(path: str) -> dict[str, int]:
    """A tier table's snapshot files, data files on disk (not the log) and its log's files and bytes."""
    from waterline.engine.delta.table_log import TableLog

    disk = log_files = log_bytes = 0
    for folder, _, names in os.walk(path):
        if Path(folder).relative_to(path).parts[:1] == ("_delta_log",):
            log_files += len(names)
            log_bytes += sum(os.path.getsize(os.path.join(folder, n)) for n in names)
        else:
            disk += len(names)
    return {"snapshot_files": len(TableLog.open(path).add_files()), "disk_files": disk,
            "log_files": log_files, "log_bytes": log_bytes}


def probe(feed, url: str) -> dict[str, Any]:
    """`status`, `read` and a subscriber's ``load_as_pandas``: median wall times, and row counts."""
    import delta_sharing

    status_ms, _ = median_ms(feed.status, 5)
    read_ms, table = median_ms(lambda: feed.read(SHARED), 5)
    load_ms, df = median_ms(lambda: delta_sharing.load_as_pandas(url), 3)
    return {"status_ms": status_ms, "read_ms": read_ms, "load_as_pandas_ms": load_ms,
            "read_rows": table.num_rows, "subscriber_rows": len(df)}


def age_tables(paths: list[str], seconds: int) -> None:
    """Every file under ``paths`` made ``seconds`` older (its modification time set back):
    what vacuum and log cleanup judge age by, so simulated time ages files as real time would."""
    for path in paths:
        for folder, _, names in os.walk(path):
            for name in names:
                file = os.path.join(folder, name)
                mtime = os.stat(file).st_mtime
                os.utime(file, (mtime - seconds, mtime - seconds))


def maintain_summary(result) -> dict[str, dict[str, int]]:
    return {name: {"files_before": t.files_before, "files_after": t.files_after,
                   "files_compacted": t.files_compacted, "files_vacuumed": t.files_vacuumed,
                   "log_files_removed": t.log_files_removed} for name, t in result.tables.items()}


# -- the run ----------------------------------------------------------------------------------


def run_soak(root: Path, *, hours: int, rows_per_minute: int, maintain_every: int, probe_every: int,
             age: bool = True, progress: Path | None = None) -> dict:
    """The simulated life of the feed under ``root``; per-hour records and maintain runs."""
    from tests.sharing.conftest import serve
    from waterline import Feed
    from waterline.clock import FixedClock

    spec = make_spec(root)
    feed = Feed(spec, clock=FixedClock(4_000_000_000_000_000))  # far future: as_of decides W
    rows_per_hour = 60 * rows_per_minute
    records: list[dict[str, Any]] = []
    maintains: list[dict[str, Any]] = []
    server, w = None, START_US
    wall0 = time.monotonic()
    try:
        for hour in range(hours):
            key = hour_key(hour)
            write_hour(feed.spark, spec, hour, rows_per_hour)
            t0 = time.perf_counter()
            feed.ingest(key)
            record: dict[str, Any] = {"hour": hour, "partition": key, "ingest_s": round(time.perf_counter() - t0, 2)}
            releases = []
            for minute in range(60):
                k = hour * 60 + minute
                w = START_US + k * MINUTE_US
                t0 = time.perf_counter()
                feed.release(as_of=w)
                releases.append((time.perf_counter() - t0) * 1000)
                if maintain_every and (k + 1) % maintain_every == 0:
                    t0 = time.perf_counter()
                    result = feed.maintain()
                    maintains.append({"hour": hour, "minute": minute, "s": round(time.perf_counter() - t0, 2),
                                      "tables": maintain_summary(result)})
            record["release_p50_ms"] = round(median(releases), 2)
            record["release_max_ms"] = round(max(releases), 2)
            record["tiers"] = {tier: table_sizes(feed.tier_path(tier)) for tier in TIERS}
            if hour in (0, BASELINE_HOUR, hours - 1) or (probe_every and hour % probe_every == 0):
                if server is None:  # started once the tier tables exist; stopped below
                    # tokens that outlive the run: a day's soak takes hours of wall time
                    server = serve(spec, root, audiences=AUDIENCES, token_ttl_ms=7 * 24 * 3_600_000)
                record.update(probe(feed, f"{server.profiles['acme']}#{FEED}.tiers.{SHARED}"))
            records.append(record)
            if progress is not None:  # each hour as it ends: a run cut short keeps what it measured
                with open(progress, "a") as fh:
                    fh.write(json.dumps(record) + "\n")
            if age:
                age_tables([feed.tier_path(t) for t in TIERS] + [spec.held_path], 3600)
            log(f"hour {hour} ({key}): ingest {record['ingest_s']}s, release p50 {record['release_p50_ms']} ms, "
                f"{SHARED} {record['tiers'][SHARED]}" + (f", read {record['read_ms']} ms" if "read_ms" in record else ""))
    finally:
        if server is not None:
            server.stop()
        if feed.spark_started:
            feed.spark.stop()
    return {"hours": hours, "rows_per_minute": rows_per_minute, "maintain_every_minutes": maintain_every, "aged": age,
            "wall_s": round(time.monotonic() - wall0, 1), "loadavg": loadavg(), "records": records,
            "maintains": maintains, "expected_rows": expected_rows(hours, rows_per_hour, w),
            "last_w": datetime.fromtimestamp(w / 1e6, UTC).isoformat()}


def compare(result: dict) -> list[dict[str, Any]]:
    """Rows of the first-vs-last table: measure, first (the first hour with a full rolling
    window, `BASELINE_HOUR`), last, ratio, target and whether it is met."""
    first, last = result["records"][min(BASELINE_HOUR, len(result["records"]) - 1)], result["records"][-1]

    def row(label: str, a: float | None, b: float | None, target: float | None) -> dict[str, Any]:
        ratio = round(b / a, 2) if a and b is not None else None
        met = None if target is None or ratio is None else ratio <= target
        return {"measure": label, "first": a, "last": b, "ratio": ratio, "target": target, "met": met}

    rows = [row(label, first.get(k), last.get(k), TARGET) for k, label in TIMED.items()]
    for tier in TIERS:
        rows += [row(f"{tier} {label}", first["tiers"][tier][k], last["tiers"][tier][k], None)
                 for k, label in SIZES.items()]
    return rows


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    return f"{value:,.2f}" if isinstance(value, float) else f"{value:,}"


def report(result: dict, rows: list[dict[str, Any]]) -> str:
    first, last = result["records"][min(BASELINE_HOUR, len(result["records"]) - 1)], result["records"][-1]
    lines = [(f"soak: {result['hours']} h of one-minute releases, {result['rows_per_minute']} rows/minute, "
              f"maintain every {result['maintain_every_minutes']} min; {result['wall_s']} s wall, "
              f"load {result['loadavg']}"),
             (f"  {'':40} {'hour ' + str(first['hour']):>12} {'hour ' + str(last['hour']):>12} "
              f"{'last/first':>10} {'target':>8} {'met':>4}")]
    for r in rows:
        target = f"<={r['target']}x" if r["target"] else ""
        lines.append(f"  {r['measure']:40} {_fmt(r['first']):>12} {_fmt(r['last']):>12} {_fmt(r['ratio']):>10} "
                     f"{target:>8} {_fmt(r['met']) if r['target'] else '':>4}")
    want = result["expected_rows"]
    lines.append(f"rows at W = {result['last_w']}: read {last.get('read_rows')}, subscriber "
                 f"{last.get('subscriber_rows')}, expected {want[SHARED]} ({SHARED}); "
                 f"hour {first['hour']} read {first.get('read_rows')}")
    lines.append(f"maintain: {len(result['maintains'])} runs, p50 "
                 f"{_fmt(median([m['s'] for m in result['maintains']]))} s" if result["maintains"] else
                 "maintain: never (--maintain-every-minutes 0)")
    for m in result["maintains"]:
        parts = [f"{name} {t['files_before']}->{t['files_after']} ({t['files_compacted']} compacted, "
                 f"{t['files_vacuumed']} vacuumed, {t['log_files_removed']} log removed)"
                 for name, t in m["tables"].items()]
        lines.append(f"  hour {m['hour']} minute {m['minute']:02} {m['s']:>6.2f}s: " + "; ".join(parts))
    if result["aged"]:
        lines.append("note: file ages are simulated (modification times set back an hour per simulated hour)")
    elif result["wall_s"] < TIME_TRAVEL_S:
        lines.append(f"note: vacuum and log cleanup go by wall-clock age (time_travel {TIME_TRAVEL_S // 3600} h); "
                     f"this run lasted {result['wall_s']:.0f} s, so no removed file or log entry was old enough")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n")[0])
    parser.add_argument("--hours", type=int, default=24, help="simulated hours (one partition each)")
    parser.add_argument("--rows-per-minute", type=int, default=60)
    parser.add_argument("--maintain-every-minutes", type=int, default=60, help="0: never (the feed left alone)")
    parser.add_argument("--probe-every", type=int, default=0,
                        help="also time status/read/load_as_pandas every N hours (0: first and last only)")
    parser.add_argument("--wall-clock", action="store_true",
                        help="do not age the tables' files with simulated time (vacuum then waits for wall time)")
    parser.add_argument("--workdir", type=Path, default=None, help="a fresh folder is made in it (default: temp)")
    parser.add_argument("--keep", action="store_true", help="keep the feed's folder afterwards")
    parser.add_argument("--json", action="store_true", help="print the result as JSON after the table")
    parser.add_argument("--progress", type=Path, default=None,
                        help="append each hour's record to this JSON-lines file as the hour ends")
    args = parser.parse_args(argv)
    if not (2 <= args.hours <= 24 * 31 and 1 <= args.rows_per_minute <= 100_000 and args.maintain_every_minutes >= 0):
        parser.error("need 2 <= --hours <= 744, 1 <= --rows-per-minute <= 100000, --maintain-every-minutes >= 0")
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="wl-bench-soak-", dir=args.workdir))
    log(f"feed folder {root}")
    try:
        result = run_soak(root, hours=args.hours, rows_per_minute=args.rows_per_minute,
                          maintain_every=args.maintain_every_minutes, probe_every=args.probe_every,
                          age=not args.wall_clock, progress=args.progress)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    rows = compare(result)
    print(report(result, rows))
    if args.json:
        print(json.dumps(result | {"comparison": rows}, indent=1))
    last, want = result["records"][-1], result["expected_rows"][SHARED]
    rows_ok = last.get("read_rows") == want and last.get("subscriber_rows") == want
    return 0 if rows_ok else 1


if __name__ == "__main__":
    sys.exit(main())
