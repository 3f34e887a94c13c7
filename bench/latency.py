"""Release latency with the real `dagster-daemon run` and the release sensor (`make bench-latency`).

Per path, a fresh temporary DAGSTER_HOME and warehouse, one embargoed tier,
N rows due at known instants GAP seconds apart. The daemon and the sensor
do everything (nothing is triggered by hand after the ingest). Afterwards
the tier's Delta history gives, per row, the commit that made it readable:
lateness = commit time - due instant; early = readable before due (by commit
timestamp, or at a W_T below due). Paths:
  cold       release_lead_seconds: 0  (run requested when due: tick + launch + JVM + MERGE)
  pre-armed  release_lead_seconds: LEAD (run requested ahead, waits on the trusted clock)
  warm       pre-armed, every run a Spark Connect client (no JVM start): WATERLINE_SPARK_REMOTE,
             else a Connect server started here on 127.0.0.1 for the path.
Usage: python -m bench.latency [--rows 10] [--gap 20] [--lead 45] [--paths cold,prearmed,warm] [--head-start 150]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.dagster import deploy  # noqa: E402  (the e2e tests' process helpers)


@contextmanager
def _connect_server():
    """WATERLINE_SPARK_REMOTE if set, else a Spark Connect server started (and stopped) here."""
    if os.environ.get("WATERLINE_SPARK_REMOTE"):
        yield os.environ["WATERLINE_SPARK_REMOTE"]
        return
    from waterline.engine.spark import cluster

    state_dir = Path(tempfile.mkdtemp(prefix="wl-latency-connect-"))
    state = cluster.start(state_dir, workers=0, connect=True)
    try:
        yield state.connect_url
    finally:
        cluster.stop(state_dir)


def run_path(name: str, lead: int, rows: int, gap: int, interval: int = 5, head_start: int = 150,
             remote: str | None = None) -> dict:
    from waterline.clock import SystemClock, format_instant
    from waterline.engine.log.timeliness import appearances
    from waterline.spec import load_spec

    root = Path(tempfile.mkdtemp(prefix=f"wl-latency-{name}-"))
    first = SystemClock().now_us() + head_start * 1_000_000
    dues = {i: first + i * gap * 1_000_000 for i in range(rows)}
    src = root / "src" / "a"
    src.mkdir(parents=True)
    with open(src / "part-0.json", "w") as fh:
        for i, due in dues.items():
            fh.write(json.dumps({"id": i, "due": format_instant(due)}) + "\n")
    spec_yaml = root / "feed.yaml"
    spec_yaml.write_text(
        f"feed: lat\nwarehouse: {root / 'wh'}\n"
        f"source: {{format: json, path: '{root / 'src'}/{{partition}}/', options: {{schema: 'id BIGINT, due STRING'}}}}\n"
        "partitions: {static: [a]}\n"
        "transform: SELECT id, CAST(due AS TIMESTAMP) AS event_time, CAST(due AS TIMESTAMP) AS embargo_until FROM source\n"
        "key: [id]\nevent_time: event_time\n"
        "tiers: {emb: 'embargo_until <= WATERLINE()'}\n"
        f"release_interval_seconds: {interval}\nrelease_lead_seconds: {lead}\n"
    )
    d = deploy.prepare(root, spec_yaml)
    if remote:  # the warm path: every run (and the ingest) goes to the long-lived Connect server
        d["env"]["WATERLINE_SPARK_REMOTE"] = remote
    else:  # cold and pre-armed: each run starts its own local JVM
        d["env"].pop("WATERLINE_SPARK_REMOTE", None)
    ingest = deploy.cli(d, "waterline", "ingest", str(spec_yaml), "--partition", "a")
    if ingest.returncode != 0:
        raise SystemExit(f"ingest failed: {ingest.stderr[-2000:]}")
    spec = load_spec(str(spec_yaml))
    with deploy.process(d, "dagster-daemon", "run", "-f", str(d["location"]), log_name="daemon"):
        started = deploy.cli(d, "dagster", "sensor", "start", "lat_release_sensor", "-f", str(d["location"]))
        if started.returncode != 0:
            raise SystemExit(f"sensor start failed: {started.stderr[-2000:]}")

        def all_released():
            from deltalake import DeltaTable

            try:
                return DeltaTable(spec.tier_path("emb")).to_pyarrow_table().num_rows >= rows
            except Exception:
                return False

        deploy.wait_for(all_released, timeout=head_start + rows * gap + 300, interval=2, what="every row released")
    seen = [a for a in appearances(spec, "emb", lambda r: dues.get(r["id"]))]
    # Rows due before the daemon's first tick after the ingest are not timed (the ingest may overrun).
    lags = sorted((a.commit_us - a.due_us) / 1e6 for a in seen if a.due_us is not None)
    return {
        "path": name, "rows": len(lags), "p50_s": statistics.median(lags) if lags else None,
        "max_s": max(lags) if lags else None, "early": sum(a.early for a in seen),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--gap", type=int, default=20)
    parser.add_argument("--lead", type=int, default=45)
    parser.add_argument("--paths", default="cold,prearmed,warm")
    parser.add_argument("--head-start", type=int, default=150,
                        help="Seconds from the ingest's start to the first due moment (the ingest must finish first).")
    args = parser.parse_args(argv)
    results = []
    for path in args.paths.split(","):
        if path == "cold":
            results.append(run_path("cold", 0, args.rows, args.gap, head_start=args.head_start))
        elif path == "prearmed":
            results.append(run_path("prearmed", args.lead, args.rows, args.gap, head_start=args.head_start))
        elif path == "warm":
            with _connect_server() as url:
                results.append(run_path("warm", args.lead, args.rows, args.gap, head_start=args.head_start,
                                        remote=url))
    print(f"{'path':<10} {'rows':>4} {'p50 s':>7} {'max s':>7} {'early':>5}")
    for r in results:
        fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        print(f"{r['path']:<10} {r['rows']:>4} {fmt(r['p50_s']):>7} {fmt(r['max_s']):>7} "
              f"{'-' if r['early'] is None else r['early']:>5}  {r.get('note', '')}")


if __name__ == "__main__":
    main()
