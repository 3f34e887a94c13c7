"""Release latency with the real `dagster-daemon run` and the release sensor (`make bench-latency`).

Per path, a fresh temporary DAGSTER_HOME and warehouse, one embargoed tier,
N rows due at known instants GAP seconds apart. The daemon and the sensor
do everything (nothing is triggered by hand after the ingest). Afterwards
the tier's Delta history gives, per row, the commit that made it readable:
lateness = commit time - due instant; early = readable before due (by commit
timestamp, or at a W_T below due). Paths:
  cold       release_lead_seconds: 0  (run requested when due: tick + launch + JVM + MERGE)
  prestaged  release_lead_seconds: LEAD (run requested ahead, waits on the trusted clock and
             pre-stages each release while waiting: at the instant one Delta commit per tier,
             no Spark); `prearmed` is accepted as an alias
  warm       pre-armed, every run a Spark Connect client (no JVM start): WATERLINE_SPARK_REMOTE,
             else a Connect server started here on 127.0.0.1 for the path.
A path name ending in ``-s3`` (or every path, with --s3) puts the warehouse on a real
S3 API: s3proxy on loopback (tests/s3proxy.py), started once here and stopped at the end;
the ingest, the daemon and its run processes get its AWS environment.

Per path the table also shows how the releases were committed, from the tier's
Delta history: a release is one waterline state (token) with op "release"; it
is pre-staged when its commit is the pre-staged one (operation "WATERLINE
RELEASE", engineInfo "waterline-prestaged"), else Spark's MERGE / SET TBLPROPERTIES.
"pre/rel" = pre-staged releases / releases; "rows pre" = timed rows that a
pre-staged commit made readable; "stage1 s" / "stagemin" = seconds from the
last staged file of a pre-staged release being written to its due moment, for
the first due moment / the least over the path (how far ahead the pre-armed
run had the release ready; from the add actions' modificationTime). The bench
waits for the release runs to end before it stops the daemon; "runs" counts
them by Dagster status.
Usage: python -m bench.latency [--rows 10] [--gap 10] [--lead 45] [--paths cold,prestaged,warm]
                               [--head-start 90] [--s3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from contextlib import ExitStack, contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.dagster import deploy  # noqa: E402  (the e2e tests' process helpers)

PATHS = ("cold", "prestaged", "warm")
ALIASES = {"prearmed": "prestaged", "pre-armed": "prestaged"}
#: commitInfo of the pre-staged commit (waterline.engine.delta.commit.OPERATION / ENGINE_INFO)
PRESTAGED_OPERATION = "WATERLINE RELEASE"
PRESTAGED_ENGINE = "waterline-prestaged"


def log(msg: str) -> None:
    print(f"[bench.latency {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@contextmanager
def _connect_server():
    """WATERLINE_SPARK_REMOTE if set, else a Spark Connect server started (and stopped) here
    (with the s3a conf of the environment it starts in: `storage.spark_conf`)."""
    if os.environ.get("WATERLINE_SPARK_REMOTE"):
        yield os.environ["WATERLINE_SPARK_REMOTE"]
        return
    from waterline.local import cluster

    state_dir = Path(tempfile.mkdtemp(prefix="wl-latency-connect-"))
    state = cluster.start(state_dir, workers=0, connect=True)
    try:
        yield state.connect_url
    finally:
        cluster.stop(state_dir)


@contextmanager
def _s3_env(proxy):
    """The s3proxy AWS environment in this process (the deltalake reads here) for the block."""
    from tests.s3proxy import restore_env, set_env

    saved = set_env(proxy.env)
    try:
        yield proxy.env
    finally:
        restore_env(saved)


def parse_paths(text: str, all_s3: bool = False) -> list[tuple[str, bool]]:
    """``cold,prestaged-s3,...`` -> [(path, on_s3)]; `prearmed` is `prestaged`."""
    out = []
    for raw in (p.strip() for p in text.split(",")):
        if not raw:
            continue
        s3 = all_s3 or raw.endswith("-s3")
        name = raw[: -len("-s3")] if raw.endswith("-s3") else raw
        name = ALIASES.get(name, name)
        if name not in PATHS:
            raise SystemExit(f"unknown path {raw!r}: one of {', '.join(PATHS)} (alias prearmed), optionally -s3")
        out.append((name, s3))
    return out


def commit_kinds(path: str) -> dict:
    """How the tier's releases were committed, from its Delta history (deltalake, no JVM).

    ``commits``: operation -> count over every retained commit; ``releases``: waterline
    states with op "release" (one per release: Spark's MERGE and SET TBLPROPERTIES
    carry the same token, a pre-staged release is one commit); ``prestaged``: those
    whose commit is the pre-staged one; ``op_of``: version -> operation."""
    from waterline.engine.delta.table_log import TableLog, parse_state

    tier_log = TableLog.open(path)
    history = tier_log.history((tier_log.version or 0) + 1)
    commits: Counter = Counter()
    op_of: dict[int, str] = {}
    releases: dict[str, bool] = {}  # token -> pre-staged
    staged_commits: list[tuple[int, str, int]] = []  # (version, token, W) of the pre-staged commits
    for c in history:
        op = c.get("operation", "?")
        op_of[int(c["version"])] = op
        commits[op] += 1
        state = parse_state(c.get("userMetadata"))
        if state is None or state.get("op") != "release":
            continue
        staged = op == PRESTAGED_OPERATION and c.get("engineInfo", PRESTAGED_ENGINE) == PRESTAGED_ENGINE
        token = state.get("token") or f"v{c['version']}"
        releases[token] = releases.get(token, False) or staged
        if staged and state.get("w") is not None:
            staged_commits.append((int(c["version"]), token, int(state["w"])))
    return {"commits": dict(commits), "releases": len(releases), "prestaged": sum(releases.values()),
            "op_of": op_of, "staged_commits": sorted(staged_commits)}


def stage_margins(path: str, staged_commits: list[tuple[int, str, int]]) -> list[float]:
    """Per pre-staged commit, seconds from its last staged file being written (the add actions'
    modificationTime under ``wl-staged/<token>/``) to the W it released at (its due moment):
    how far ahead of the moment the pre-armed run had the release ready."""
    import pyarrow as pa

    from waterline.engine.delta.storage import delta_table

    out = []
    for version, token, w_us in staged_commits:
        table = delta_table(path)
        table.load_as_version(version)
        adds = pa.table(table.get_add_actions(flatten=False)).select(["path", "modification_time"]).to_pylist()
        written = [a["modification_time"] for a in adds if a["path"].startswith(f"wl-staged/{token}/")]
        if written:
            out.append(w_us / 1e6 - max(written) / 1e3)
    return out


IN_PROGRESS = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING")


def run_statuses(home: Path) -> Counter:
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(home)) as instance:
        return Counter(r.status.value for r in instance.get_runs())


def run_path(name: str, lead: int, rows: int, gap: int, interval: int = 5, head_start: int = 150,
             remote: str | None = None, s3=None) -> dict:
    """One path; ``s3``: a running `tests.s3proxy.S3Proxy` to put the warehouse on (its AWS env
    must be set in this process, see `_s3_env`)."""
    from waterline.clock import SystemClock, format_instant
    from waterline.engine.delta.storage import delta_table
    from waterline.engine.proof.timeliness import appearances
    from waterline.spec import load_spec

    label = name + ("-s3" if s3 is not None else "")
    root = Path(tempfile.mkdtemp(prefix=f"wl-latency-{label}-"))
    warehouse = s3.uri(f"latency-{label}-{uuid.uuid4().hex[:8]}") if s3 is not None else str(root / "wh")
    log(f"{label}: root {root} (daemon.log, dagster_home), warehouse {warehouse}")
    first = SystemClock().now_us() + head_start * 1_000_000
    dues = {i: first + i * gap * 1_000_000 for i in range(rows)}
    src = root / "src" / "a"
    src.mkdir(parents=True)
    with open(src / "part-0.json", "w") as fh:
        for i, due in dues.items():
            fh.write(json.dumps({"id": i, "due": format_instant(due)}) + "\n")
    spec_yaml = root / "feed.yaml"
    spec_yaml.write_text(
        f"feed: lat\nwarehouse: {warehouse}\n"
        f"source: {{format: json, path: '{root / 'src'}/{{partition}}/', options: {{schema: 'id BIGINT, due STRING'}}}}\n"
        "partitions: {static: [a]}\n"
        "transform: SELECT id, CAST(due AS TIMESTAMP) AS event_time, CAST(due AS TIMESTAMP) AS embargo_until FROM source\n"
        "key: [id]\nevent_time: event_time\n"
        "tiers: {emb: 'embargo_until <= WATERLINE()'}\n"
        f"release_interval_seconds: {interval}\nrelease_lead_seconds: {lead}\n"
    )
    d = deploy.prepare(root, spec_yaml)
    if s3 is not None:  # the ingest, the daemon and (inherited) every run process reach s3proxy
        d["env"].update(s3.env)
    if remote:  # the warm path: every run (and the ingest) goes to the long-lived Connect server
        d["env"]["WATERLINE_SPARK_REMOTE"] = remote
    else:  # cold and pre-armed: each run starts its own local JVM
        d["env"].pop("WATERLINE_SPARK_REMOTE", None)
    t0 = time.monotonic()
    ingest = deploy.cli(d, "waterline", "ingest", str(spec_yaml), "--partition", "a")
    if ingest.returncode != 0:
        raise SystemExit(f"{label}: ingest failed: {ingest.stderr[-2000:]}")
    log(f"{label}: ingest took {time.monotonic() - t0:.1f}s; first due in "
        f"{(first - SystemClock().now_us()) / 1e6:.1f}s")
    spec = load_spec(str(spec_yaml))
    with deploy.process(d, "dagster-daemon", "run", "-f", str(d["location"]), log_name="daemon"):
        started = deploy.cli(d, "dagster", "sensor", "start", "lat_release_sensor", "-f", str(d["location"]))
        if started.returncode != 0:
            raise SystemExit(f"{label}: sensor start failed: {started.stderr[-2000:]}")

        def all_released():
            try:
                return delta_table(spec.tier_path("emb")).to_pyarrow_table().num_rows >= rows
            except Exception:
                return False

        try:
            deploy.wait_for(all_released, timeout=head_start + rows * gap + 300, interval=2,
                            what=f"{label}: every row released")
        except AssertionError as exc:
            raise SystemExit(f"{exc}\ndaemon log tail ({root / 'daemon.log'}):\n{deploy.log_tail(d, 'daemon')}")
        # Let the runs end (the tier checks after the release) before the daemon's process
        # group is stopped, so a run's status is its own and not an interruption by the bench.
        try:
            deploy.wait_for(lambda: not any(k in IN_PROGRESS for k in run_statuses(d["home"])),
                            timeout=300, interval=3, what=f"{label}: the release runs to end")
        except AssertionError as exc:
            log(f"{exc}; stopping the daemon anyway")
        statuses = run_statuses(d["home"])
    seen = [a for a in appearances(spec, "emb", lambda r: dues.get(r["id"]))]
    kinds = commit_kinds(spec.tier_path("emb"))
    timed = [a for a in seen if a.due_us is not None]
    # Rows due before the daemon's first tick after the ingest are not timed (the ingest may overrun).
    lags = sorted((a.commit_us - a.due_us) / 1e6 for a in timed)
    per_row = [(int(a.row["id"]), round((a.commit_us - a.due_us) / 1e6, 3), kinds["op_of"].get(a.version, "?"))
               for a in sorted(timed, key=lambda a: a.due_us)]
    margins = stage_margins(spec.tier_path("emb"), kinds["staged_commits"])
    first_staged = next((m for (_, _, w), m in zip(kinds["staged_commits"], margins) if w == dues[0]), None)
    return {
        "path": label, "rows": len(lags), "p50_s": statistics.median(lags) if lags else None,
        "max_s": max(lags) if lags else None, "early": sum(a.early for a in seen),
        "releases": kinds["releases"], "prestaged": kinds["prestaged"], "commits": kinds["commits"],
        "rows_prestaged": sum(1 for _, _, op in per_row if op == PRESTAGED_OPERATION),
        "stage_first_s": first_staged, "stage_min_s": min(margins) if margins else None,
        "runs": dict(statuses), "per_row": per_row, "root": str(root),
    }


def print_table(results: list[dict]) -> None:
    fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    print(f"{'path':<13} {'rows':>4} {'p50 s':>7} {'max s':>7} {'early':>5} {'pre/rel':>7} {'rows pre':>8} "
          f"{'stage1 s':>8} {'stagemin':>8}  runs; commits by operation")
    for r in results:
        if "error" in r:
            print(f"{r['path']:<13} FAILED: {r['error']}")
            continue
        commits = ", ".join(f"{op} {n}" for op, n in sorted(r["commits"].items()))
        runs = " ".join(f"{n} {st.lower()}" for st, n in sorted(r["runs"].items()))
        print(f"{r['path']:<13} {r['rows']:>4} {fmt(r['p50_s']):>7} {fmt(r['max_s']):>7} "
              f"{'-' if r['early'] is None else r['early']:>5} {str(r['prestaged']) + '/' + str(r['releases']):>7} "
              f"{r['rows_prestaged']:>8} {fmt(r['stage_first_s']):>8} {fmt(r['stage_min_s']):>8}  "
              f"{runs}; {commits}")
    for r in results:
        if "error" in r:
            continue
        rows = " ".join(f"{i}:{lag:+.2f}{'*' if op == PRESTAGED_OPERATION else ''}" for i, lag, op in r["per_row"])
        print(f"  {r['path']}: row:lag s (* pre-staged commit): {rows}")
        print(f"  {r['path']}: logs under {r['root']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--gap", type=int, default=10)
    parser.add_argument("--lead", type=int, default=45)
    parser.add_argument("--paths", default="cold,prestaged,warm",
                        help="Comma-separated: cold, prestaged (alias prearmed), warm; a -s3 suffix puts "
                             "that path's warehouse on s3proxy.")
    parser.add_argument("--s3", action="store_true", help="Every path's warehouse on s3proxy (loopback).")
    parser.add_argument("--head-start", type=int, default=90,
                        help="Seconds from the ingest's start to the first due moment (the ingest must finish first).")
    args = parser.parse_args(argv)
    paths = parse_paths(args.paths, args.s3)
    started = time.monotonic()
    results = []
    with ExitStack() as stack:
        proxy = None
        if any(s3 for _, s3 in paths):
            from tests.s3proxy import S3Proxy

            proxy = S3Proxy.start(Path(tempfile.mkdtemp(prefix="wl-latency-s3proxy-")))
            stack.callback(proxy.stop)
            log(f"s3proxy on {proxy.endpoint} (log {proxy.log})")
        for path, s3 in paths:
            with ExitStack() as per_path:
                if s3:
                    per_path.enter_context(_s3_env(proxy))
                lead = 0 if path == "cold" else args.lead
                label = path + ("-s3" if s3 else "")
                try:
                    remote = per_path.enter_context(_connect_server()) if path == "warm" else None
                    results.append(run_path(path, lead, args.rows, args.gap, head_start=args.head_start,
                                            remote=remote, s3=proxy if s3 else None))
                except (Exception, SystemExit) as exc:  # noqa: BLE001  (report it, run the other paths)
                    log(f"{label}: FAILED: {exc}")
                    results.append({"path": label, "error": str(exc).splitlines()[0] if str(exc) else repr(exc)})
    print_table(results)
    print(f"total {time.monotonic() - started:.0f}s, rows {args.rows}, gap {args.gap}s, lead {args.lead}s, "
          f"head start {args.head_start}s, load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
