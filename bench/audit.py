"""What a day's release proof costs (`.venv/bin/python -m bench.audit`).

The soak feed (`bench.soak`: hourly partitions, one-minute releases, ``maintain`` hourly,
simulated file ages) is released for ``--hours`` simulated hours, by default only its
``last_1h`` tier: a rolling hour, so every release inserts the rows that became due and
deletes the ones that expired, the hardest proof. 24 hours are 1,440 release commits.
Then `Feed.audit_history` proves them three ways, each timed (median of ``--repeat``):

* **kept + live**: as a user audits a maintained feed: the commits `maintain` proved and
  kept (``_wl_proofs``), and the commits since its last run from the change data feed.
* **live**: the whole day from the change data feed in one Spark pass (``_wl_proofs`` moved
  aside for the measurement and put back): a feed never maintained, or an auditor who
  trusts no kept proof. ``maintenance.time_travel`` is longer than the day here, so the
  change data of every release is still there to read.
* **last hour**: ``--from`` one hour before the end, as the Dagster check and the Airflow
  audit task prove only what came since their last run.

The margins are large: each release commits now (wall clock) rows due in the simulated
2026-01-01. Each must find every release, 0 breaches and nothing unproven; target: the whole day in
<= 60 s (issue 26). The build takes most of the wall time (a release at an arbitrary
``as_of`` is a Spark release, ~3 s, so a day takes ~75 minutes alone); ``--reuse DIR`` times a
feed a ``--keep`` run left, ``--resume DIR`` continues a ``--keep`` build that was stopped.

Usage: python -m bench.audit [--hours 24] [--tiers last_1h] [--repeat 3] [--workdir DIR]
       [--keep] [--reuse DIR | --resume DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.probes import loadavg, median
from bench.soak import MINUTE_US, START_US, TIERS, age_tables, hour_key, make_spec, write_hour

TARGET_S = 60.0
#: The hours a build has finished, in the feed's folder (what ``--resume`` continues from).
PROGRESS = "built_hours.json"
# Longer than any day this bench builds: vacuum and log cleanup keep every release's change
# data, so the live proof can read all of it.
TIME_TRAVEL_S = 7 * 24 * 3600


def log(msg: str) -> None:
    print(f"[bench.audit {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def build(feed, hours: int, rows_per_minute: int, root: Path) -> dict[str, Any]:
    """``hours`` simulated hours of the feed: ingest each hour, release every minute, maintain
    at each hour's end (which proves and keeps the hour's releases), age the files an hour.

    Each finished hour is recorded in ``root/PROGRESS``, so a build stopped part-way continues
    (``--resume``) from the hour it was in: that hour's ingest appends nothing again (same
    output), its releases up to the tier's W_T change nothing, and the rest run as they would."""
    spec = feed.spec
    progress = root / PROGRESS
    done: list[dict[str, Any]] = json.loads(progress.read_text()) if progress.exists() else []
    if done:
        log(f"continuing at hour {len(done)} of {hours}")
    for hour in range(len(done), hours):
        wall0 = time.monotonic()
        write_hour(feed.spark, spec, hour, 60 * rows_per_minute)
        feed.ingest(hour_key(hour))
        releases_ms = []
        for minute in range(60):
            t0 = time.perf_counter()
            feed.release(as_of=START_US + (hour * 60 + minute) * MINUTE_US)
            releases_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        feed.maintain()
        maintain_s = time.perf_counter() - t0
        age_tables([feed.tier_path(t) for t in spec.tiers] + [spec.held_path], 3600)
        done.append({"hour": hour, "releases_ms": [round(ms, 1) for ms in releases_ms],
                     "maintain_s": round(maintain_s, 2), "wall_s": round(time.monotonic() - wall0, 1)})
        progress.write_text(json.dumps(done))
        log(f"hour {hour}: release p50 {median(releases_ms):.0f} ms, maintain {maintain_s:.1f} s")
    every = [ms for h in done for ms in h["releases_ms"]]
    return {"build_s": round(sum(h["wall_s"] for h in done), 1), "release_p50_ms": round(median(every), 1),
            "maintain_p50_s": round(median([h["maintain_s"] for h in done]), 2)}


def timed_audit(feed, tier: str, repeat: int, start_us: int | None = None) -> dict[str, Any]:
    """The median wall time of `Feed.audit_history` of ``tier`` and what the last call proved."""
    spent, proof = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        proof = feed.audit_history(start=start_us, tiers=[tier])[tier]
        spent.append(time.perf_counter() - t0)
    releases = [r for r in proof.releases if r.inserted or r.updated or r.deleted]
    margins = [r.min_margin_us for r in proof.releases if r.min_margin_us is not None]
    return {"s": round(median(spent), 2), "commits": len(proof.releases), "changing": len(releases),
            "rows": sum(r.inserted + r.updated for r in proof.releases),
            "deleted": sum(r.deleted for r in proof.releases), "breaches": len(proof.breaches),
            "unproven": len(proof.unproven), "least_margin_s": round(min(margins) / 1e6, 1) if margins else None}


def measure(feed, tiers: list[str], repeat: int) -> dict[str, dict[str, Any]]:
    """Per tier: the kept + live, the live-only and the last-hour audit."""
    proofs = Path(feed.spec.feed_dir) / "_wl_proofs"
    aside = proofs.with_name("_wl_proofs.aside")
    out: dict[str, dict[str, Any]] = {}
    for tier in tiers:
        out[tier] = {"kept + live": timed_audit(feed, tier, repeat)}
        kept = proofs.exists()
        if kept:
            proofs.rename(aside)
        try:
            out[tier]["live"] = timed_audit(feed, tier, repeat)
        finally:
            if kept:
                aside.rename(proofs)
        # the range is of commit times (wall clock), not of the simulated minutes: the last
        # simulated hour is the last 60 release commits
        releases = feed.audit_history(tiers=[tier])[tier].releases
        out[tier]["last hour"] = timed_audit(feed, tier, repeat, start_us=releases[-60].committed_us)
        log(f"{tier}: " + "; ".join(f"{k} {v['s']} s ({v['commits']} commits)" for k, v in out[tier].items()))
    return out


def report(result: dict[str, Any]) -> str:
    b = result["build"]
    lines = [(f"audit: {result['hours']} h of one-minute releases of {', '.join(result['tiers'])}, "
             f"{result['rows_per_minute']} rows/minute, maintain hourly; build {b.get('build_s', '-')} s "
             f"(release p50 {b.get('release_p50_ms', '-')} ms), load {result['loadavg']}"),
             (f"  {'tier':12} {'audit':12} {'seconds':>8} {'commits':>8} {'changing':>9} {'rows':>8} {'deleted':>8} "
             f"{'breaches':>9} {'unproven':>9} {'least margin s':>16} {'<= 60 s':>8}")]
    for tier, runs in result["audits"].items():
        for kind, r in runs.items():
            met = "yes" if r["s"] <= TARGET_S else "NO"
            margin = "-" if r["least_margin_s"] is None else f"{r['least_margin_s']:,.1f}"
            lines.append(f"  {tier:12} {kind:12} {r['s']:>8.2f} {r['commits']:>8,} {r['changing']:>9,} {r['rows']:>8,} "
                         f"{r['deleted']:>8,} {r['breaches']:>9} {r['unproven']:>9} "
                         f"{margin:>16} {met:>8}")
    return "\n".join(lines)


def ok(result: dict[str, Any]) -> bool:
    """Every audit found every release, none early, nothing unproven, within the target."""
    releases = 60 * result["hours"]
    for runs in result["audits"].values():
        for kind, r in runs.items():
            want = 60 if kind == "last hour" else releases
            if r["breaches"] or r["unproven"] or r["commits"] < want or r["s"] > TARGET_S:
                return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.audit", description=__doc__.split("\n")[0])
    parser.add_argument("--hours", type=int, default=24, help="simulated hours of one-minute releases")
    parser.add_argument("--rows-per-minute", type=int, default=60)
    parser.add_argument("--tiers", default="last_1h", help=f"comma-separated, of {', '.join(TIERS)}")
    parser.add_argument("--repeat", type=int, default=3, help="timed audits per measure (the median is reported)")
    parser.add_argument("--workdir", type=Path, default=None, help="a fresh folder is made in it (default: temp)")
    parser.add_argument("--keep", action="store_true", help="keep the feed's folder (for --reuse)")
    parser.add_argument("--reuse", type=Path, default=None, help="time the feed a --keep run left in this folder")
    parser.add_argument("--resume", type=Path, default=None,
                        help="continue the build a stopped --keep run left in this folder, then time it")
    parser.add_argument("--json", action="store_true", help="print the result as JSON after the table")
    args = parser.parse_args(argv)
    tiers = [t.strip() for t in args.tiers.split(",") if t.strip()]
    if not tiers or set(tiers) - set(TIERS) or not 1 <= args.hours <= 24 * 31 or args.repeat < 1:
        parser.error(f"need --tiers among {', '.join(TIERS)}, 1 <= --hours <= 744, --repeat >= 1")

    from waterline import Feed
    from waterline.clock import FixedClock

    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    # absolute: the spec resolves a relative warehouse against the feed's folder
    root = (args.reuse or args.resume or Path(tempfile.mkdtemp(prefix="wl-bench-audit-", dir=args.workdir))).resolve()
    log(f"feed folder {root}")
    spec = make_spec(root, tiers={t: TIERS[t] for t in tiers}, time_travel_s=TIME_TRAVEL_S, audiences={})
    feed = Feed(spec, clock=FixedClock(4_000_000_000_000_000))  # far future: as_of decides W
    try:
        built = {} if args.reuse else build(feed, args.hours, args.rows_per_minute, root)
        result = {"hours": args.hours, "rows_per_minute": args.rows_per_minute, "tiers": tiers, "build": built,
                  "audits": measure(feed, tiers, args.repeat), "loadavg": loadavg()}
    finally:
        if feed.spark_started:
            feed.spark.stop()
        if not (args.keep or args.reuse or args.resume):
            shutil.rmtree(root, ignore_errors=True)
    print(report(result))
    if args.json:
        print(json.dumps(result, indent=1))
    return 0 if ok(result) else 1


if __name__ == "__main__":
    sys.exit(main())
