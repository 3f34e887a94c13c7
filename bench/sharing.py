"""Delta Sharing under load on loopback (`.venv/bin/python -m bench.sharing`).

A feed with tiers d10/win/emb and audiences acme [d10] and news [win, emb] on a local
warehouse; `waterline share serve` in its own process on 127.0.0.1 (``--server thread``
runs it in this process instead, as tests/sharing/test_load.py does). While this process
re-ingests revisions and commits releases with Spark, CLIENTS threads read:

  snapshot  the official client's ``load_as_pandas`` (the tier now), between two raw
            ``/version`` requests: the rows must equal the oracle at one table version
            in that window;
  changes   raw ``/version`` -> v, then ``load_table_changes_as_pandas(0..v)``: replayed,
            the rows must equal the oracle at v exactly;
  travel    ``load_as_pandas(version=v)`` for a released v: the oracle at v exactly;
  raw       plain HTTP on the cheap endpoints (shares, tables, version, metadata) and
            ``/query``, whose files' record counts must add up to the oracle's rows at the
            version in its ``delta-table-version`` header.

Every observation is checked after the run, against the oracle (`waterline.semantics`)
recorded after each release for every table version it wrote. Bounded: at most
``--max-seconds`` (releases stop starting after it; clients then stop) and
``--max-requests`` per client; each client pauses ``--think-ms`` (mean) between
operations; only 127.0.0.1. Prints request
counts and p50/p99 per endpoint (the server's access log: time inside the server) and
per client operation (wall time seen by the client, which includes file downloads).

Usage: python -m bench.sharing [--clients 8] [--releases 8] [--rows 400] [--max-seconds 360]
       [--max-requests 20000] [--think-ms 25] [--server process|thread] [--json]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import delta_sharing  # noqa: E402
import requests  # noqa: E402
from requests.adapters import HTTPAdapter  # noqa: E402
from urllib3.util.retry import Retry  # noqa: E402
import yaml  # noqa: E402

from tests.engine.feedkit import far_future_clock, make_spec, write_partition  # noqa: E402
from tests.engine.model import MINUTE, POLICIES, FeedModel, expected_tier  # noqa: E402
from tests.sharing.conftest import LiveServer  # noqa: E402
from tests.sharing.scenario import BASE_US, replay, rows, source  # noqa: E402
from waterline.engine.delta.table_log import TableLog  # noqa: E402
from waterline.sharing.server import SharingServer  # noqa: E402
from waterline.sharing.tokens import TokenStore  # noqa: E402

TIERS = {t: POLICIES[t] for t in ("d10", "win", "emb")}
AUDIENCES = {"acme": ["d10"], "news": ["win", "emb"]}
PARTITIONS = ("a", "b", "c")
ROLES = ("snapshot", "changes", "raw", "snapshot", "travel", "raw", "changes", "raw")
_ACCESS = re.compile(r"recipient=(\S+) (\S+) (\S+) status=(\d+).* ms=([\d.]+)")


# -- the feed ---------------------------------------------------------------------------------


def partition_rows(partition: str, n: int, revision: int) -> list[dict]:
    """``n`` rows of ``partition`` at ``revision``: event times over 60 minutes, a third
    embargoed; each revision rewrites some payloads, removes some rows, adds a few."""
    offset = PARTITIONS.index(partition)
    out = []
    for i in range(n):
        if revision and i % 11 == revision % 11:
            continue  # removed by this revision
        minute = (i * 7 + offset * 13) % 60
        emb = minute + 5 + (i % 35) if i % 3 == 0 else None
        v = f"{partition}-{i}-r{revision if i % 7 == revision % 7 else 0}"
        out.append({"id": i, "event_time": BASE_US + minute * MINUTE, "status": "final",
                    "embargo_until": None if emb is None else BASE_US + emb * MINUTE, "v": v})
    out += [{"id": n + revision * 10 + j, "event_time": BASE_US + (20 + 5 * revision + j) * MINUTE,
             "status": "final", "embargo_until": None, "v": f"{partition}-new-{revision}-{j}"}
            for j in range(3 if revision else 0)]
    return out


def _digest(r: dict) -> int:
    return hash(frozenset(r.items()))


@dataclass
class Oracle:
    """The oracle's rows (as a digest) per (tier, table version), filled in after each release."""

    expected: dict[tuple[str, int], int] = field(default_factory=dict)
    sizes: dict[tuple[str, int], int] = field(default_factory=dict)
    released: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    last: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, spec, model: FeedModel, w: int) -> None:
        for tier in spec.tiers:
            version = TableLog.open(spec.tier_path(tier)).version
            want = expected_tier(model, tier, w)
            with self.lock:
                for v in range(self.last.get(tier, -1) + 1, version + 1):
                    self.expected[(tier, v)] = _digest(want)
                    self.sizes[(tier, v)] = len(want)
                self.last[tier] = version
                self.released[tier].append(version)

    def travel_versions(self, tier: str) -> list[int]:
        with self.lock:
            return list(self.released[tier])


# -- the server ---------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class Server:
    """`waterline share serve` in a subprocess (``process``) or uvicorn in a thread (``thread``)."""

    def __init__(self, spec, spec_file: Path, store: Path, mode: str, token: str, access_records: bool = True) -> None:
        self.mode, self.port = mode, _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        if mode != "process" and not access_records:
            raise ValueError("the access records are switched off only for a server in its own process")
        if mode == "process":
            self.log_path = spec_file.parent / "access.log"
            self._log = self.log_path.open("wb")
            if access_records:  # the product as users run it
                command = [str(Path(sys.executable).with_name("waterline")), "share", "serve", str(spec_file),
                           "--host", "127.0.0.1"]
            else:  # the same code with the access log table off (the CLI has no such switch)
                command = [sys.executable, "-m", "bench.sharing_server", str(spec_file), "--no-access-records"]
            self.proc = subprocess.Popen(command + ["--port", str(self.port), "--store", str(store)], cwd=REPO,
                                         stdout=subprocess.DEVNULL, stderr=self._log, stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + 60
            while True:
                try:
                    requests.get(self.endpoint + "/shares", headers={"Authorization": f"Bearer {token}"}, timeout=2)
                    break
                except requests.ConnectionError:
                    if time.monotonic() > deadline or self.proc.poll() is not None:
                        raise RuntimeError(f"sharing server did not start (see {self.log_path})") from None
                    time.sleep(0.2)
        else:
            self.handler = _Lines()
            logger = logging.getLogger("waterline.sharing.access")
            logger.addHandler(self.handler)
            logger.setLevel(logging.INFO)
            self.live = LiveServer(SharingServer([spec], TokenStore(store), url_ttl_seconds=600))
            self.endpoint = self.live.endpoint

    def access_lines(self) -> list[str]:
        if self.mode == "process":
            self._log.flush()
            return self.log_path.read_text(errors="replace").splitlines()
        return list(self.handler.lines)

    def stop(self) -> None:
        if self.mode == "process":
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)
            self._log.close()
        else:
            self.live.stop()
            logging.getLogger("waterline.sharing.access").removeHandler(self.handler)


# -- the clients --------------------------------------------------------------------------------


@dataclass
class Observation:
    kind: str
    tier: str
    digest: int | None = None
    low: int | None = None       # the window of versions the read may show
    high: int | None = None
    size: int | None = None      # raw /query: the sum of its files' numRecords


@dataclass
class Client:
    index: int
    role: str
    recipient: str
    profile: str
    token: str
    endpoint: str
    oracle: Oracle
    stop: threading.Event
    max_requests: int
    seed: int
    think_s: float = 0.0
    observations: list[Observation] = field(default_factory=list)
    timings: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    failures: list[str] = field(default_factory=list)
    requests_made: int = 0

    def __post_init__(self) -> None:
        self.session = requests.Session()
        # A reused keep-alive connection the server closed at its idle timeout (uvicorn: 5 s) as
        # the request went out fails with a reset; the official client retries connection errors
        # (delta_sharing.rest_client._should_retry), and so does this raw one, every method
        # included (the protocol's POST /query is a read).
        retry = Retry(total=3, connect=3, read=3, status=0, backoff_factor=0.1, allowed_methods=None)
        self.session.mount("http://", HTTPAdapter(max_retries=retry))
        self.session.headers["Authorization"] = f"Bearer {self.token}"
        self.random = random.Random(self.seed)

    def _timed(self, op: str, fn, *args, **kwargs):
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self.timings[op].append((time.perf_counter() - started) * 1000)

    def _get(self, op: str, path: str, method: str = "GET", **kwargs) -> requests.Response:
        self.requests_made += 1
        resp = self._timed(op, self.session.request, method, self.endpoint + path, timeout=60, **kwargs)
        if resp.status_code != 200:
            raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text[:200]}")
        return resp

    def _version(self, tier: str) -> int:
        resp = self._get("raw version", f"/shares/f/schemas/tiers/tables/{tier}/version")
        return int(resp.headers["delta-table-version"])

    def run(self) -> None:
        tiers = AUDIENCES[self.recipient]
        while not self.stop.is_set() and self.requests_made < self.max_requests:
            tier = self.random.choice(tiers)
            url = f"{self.profile}#f.tiers.{tier}"
            try:
                getattr(self, "_" + self.role)(tier, url)
            except Exception as exc:  # every failure is reported; none is expected
                self.failures.append(f"client {self.index} {self.role} {tier}: {type(exc).__name__}: {exc}"[:400])
            self.stop.wait(self.think_s * (0.5 + self.random.random()))  # a pause between operations

    def _snapshot(self, tier: str, url: str) -> None:
        low = self._version(tier)
        self.requests_made += 1
        df = self._timed("client load_as_pandas", delta_sharing.load_as_pandas, url)
        high = self._version(tier)
        self.observations.append(Observation("snapshot", tier, _digest(rows(df)), low, high))

    def _changes(self, tier: str, url: str) -> None:
        end = self._version(tier)
        self.requests_made += 1
        df = self._timed("client load_table_changes", delta_sharing.load_table_changes_as_pandas, url,
                         starting_version=0, ending_version=end)
        self.observations.append(Observation("changes", tier, _digest(replay(df)), end, end))

    def _travel(self, tier: str, url: str) -> None:
        versions = self.oracle.travel_versions(tier)
        if not versions:
            time.sleep(0.05)
            return
        version = self.random.choice(versions)
        self.requests_made += 1
        df = self._timed("client load_as_pandas(version)", delta_sharing.load_as_pandas, url, version=version)
        self.observations.append(Observation("travel", tier, _digest(rows(df)), version, version))

    def _raw(self, tier: str, url: str) -> None:
        base = f"/shares/f/schemas/tiers/tables/{tier}"
        self._get("raw shares", "/shares")
        self._get("raw all-tables", "/shares/f/all-tables")
        self._get("raw metadata", base + "/metadata")
        self._version(tier)
        resp = self._get("raw query", base + "/query", "POST", json={})
        version = int(resp.headers["delta-table-version"])
        size = 0
        for line in resp.text.splitlines():
            if line.startswith('{"file"'):
                size += json.loads(json.loads(line)["file"]["stats"])["numRecords"]
        self.observations.append(Observation("raw query", tier, None, version, version, size))


# -- checking and reporting -----------------------------------------------------------------------


def check(observations: list[Observation], oracle: Oracle) -> list[str]:
    """Every read showed the oracle's rows at one table version (in its window); [] if so."""
    bad = []
    for o in observations:
        window = range(o.low, o.high + 1)
        if o.size is not None:
            ok = oracle.sizes.get((o.tier, o.low)) == o.size
        else:
            ok = any(oracle.expected.get((o.tier, v)) == o.digest for v in window)
        if not ok:
            known = [v for v in window if (o.tier, v) in oracle.expected]
            bad.append(f"{o.kind} {o.tier}: rows equal the oracle at no version in {o.low}..{o.high} "
                       f"(versions with an oracle: {known})")
    return bad


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else float("nan")


def _endpoint(method: str, path: str) -> str:
    """``POST .../{table}/query`` etc.: the route of an access log line, names replaced."""
    if path.startswith("/files/"):
        return f"{method} /files/{{token}}"
    names = {1: "{share}", 3: "{schema}", 5: "{table}"}
    shown = "/".join(names.get(i, p) for i, p in enumerate(path.strip("/").split("/")))
    return f"{method} " + ("/" + shown).replace("/shares/{share}/schemas/{schema}/tables/{table}", ".../{table}")


def server_table(lines: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for line in lines:
        m = _ACCESS.search(line)
        if not m:
            continue
        _, method, path, status, ms = m.groups()
        row = out.setdefault(_endpoint(method, path), {"count": 0, "errors": 0, "ms": []})
        row["count"] += 1
        row["errors"] += status != "200" and status != "206"
        row["ms"].append(float(ms))
    return out


def _table(title: str, rows_: dict[str, dict[str, Any]]) -> str:
    lines = [title, f"  {'endpoint':44} {'count':>7} {'errors':>6} {'p50 ms':>8} {'p99 ms':>8}"]
    for name in sorted(rows_):
        r = rows_[name]
        lines.append(f"  {name:44} {r['count']:>7} {r['errors']:>6} {percentile(r['ms'], 0.5):>8.1f} "
                     f"{percentile(r['ms'], 0.99):>8.1f}")
    return "\n".join(lines)


# -- the run --------------------------------------------------------------------------------------


def run_load(spark, root: Path, *, clients: int = 8, releases: int = 8, rows_per_partition: int = 400,
             max_seconds: float = 360, max_requests: int = 20_000, think_ms: float = 25,
             server_mode: str = "process", settle_seconds: float = 2.0, access_records: bool = True,
             log=print) -> dict[str, Any]:
    """Run the load; returns counts, failures, inconsistent reads and the latency tables."""
    from waterline import Feed

    started = time.monotonic()
    deadline = started + max_seconds
    spec = make_spec(root, TIERS, audiences=AUDIENCES)
    spec_file = root / "feed.yaml"
    spec_file.write_text(yaml.safe_dump(spec.to_dict()))
    feed = Feed(spec, spark=spark, clock=far_future_clock())
    model, oracle = FeedModel(TIERS), Oracle()
    revision = {p: 0 for p in PARTITIONS}

    def ingest(partition: str) -> None:
        data = partition_rows(partition, rows_per_partition, revision[partition])
        write_partition(root, partition, [source(r) for r in data])
        feed.ingest(partition)
        model.ingest(partition, data)

    def release(k: int) -> None:
        w = BASE_US + (10 + 8 * k) * MINUTE
        feed.release(as_of=w)
        oracle.record(spec, model, w)

    for p in PARTITIONS:
        ingest(p)
    release(0)
    store_path = root / "tokens.json"
    store = TokenStore(store_path)
    now = int(time.time() * 1000)
    tokens = {r: store.create(r, now_ms=now, expires_ms=now + 3_600_000)[0] for r in AUDIENCES}
    server = Server(spec, spec_file, store_path, server_mode, tokens["acme"], access_records)
    profiles = {}
    for r, t in tokens.items():
        profiles[r] = str(root / f"{r}.share")
        Path(profiles[r]).write_text(json.dumps({"shareCredentialsVersion": 1, "endpoint": server.endpoint,
                                                 "bearerToken": t}))
    stop = threading.Event()
    recipients = list(AUDIENCES)
    crowd = [Client(i, ROLES[i % len(ROLES)], recipients[i % 2], profiles[recipients[i % 2]],
                    tokens[recipients[i % 2]], server.endpoint, oracle, stop, max_requests, seed=i,
                    think_s=think_ms / 1000)
             for i in range(clients)]
    threads = [threading.Thread(target=c.run, name=f"client-{c.index}", daemon=True) for c in crowd]
    done_releases = 1
    try:
        load_started = time.monotonic()
        for t in threads:
            t.start()
        for k in range(1, releases):
            if time.monotonic() > deadline:
                break
            p = PARTITIONS[k % len(PARTITIONS)]
            revision[p] = k
            ingest(p)
            release(k)
            done_releases += 1
            log(f"release {k}: W = +{10 + 8 * k} min, versions {dict(oracle.last)}, "
                f"{sum(c.requests_made for c in crowd)} client requests so far")
        time.sleep(max(0.0, min(settle_seconds, deadline - time.monotonic())))
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=max(5.0, deadline + 60 - time.monotonic()))
        load_seconds = time.monotonic() - load_started
        lines = server.access_lines()
        server.stop()
    stuck = [t.name for t in threads if t.is_alive()]
    observations = [o for c in crowd for o in c.observations]
    client_rows: dict[str, dict[str, Any]] = {}
    for c in crowd:
        for op, values in c.timings.items():
            row = client_rows.setdefault(op, {"count": 0, "errors": 0, "ms": []})
            row["count"] += len(values)
            row["ms"] += values
    per_server = server_table(lines)
    return {
        "clients": clients, "releases": done_releases, "rows_per_partition": rows_per_partition,
        "seconds": round(load_seconds, 1), "server": server_mode, "think_ms": think_ms,
        "access_records": access_records,
        "reads_checked": len(observations),
        "reads_by_kind": dict(sorted(_count(o.kind for o in observations).items())),
        "failures": [f for c in crowd for f in c.failures] + [f"{n} did not stop" for n in stuck],
        "inconsistent": check(observations, oracle),
        "server_requests": sum(r["count"] for r in per_server.values()),
        "server_errors": sum(r["errors"] for r in per_server.values()),
        "server_table": per_server, "client_table": client_rows,
    }


def _count(items) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for item in items:
        out[item] += 1
    return out


def report(result: dict[str, Any]) -> str:
    head = (f"{result['clients']} clients ({result['think_ms']} ms mean pause between operations), "
            f"{result['releases']} releases, {result['rows_per_partition']} rows x {len(PARTITIONS)} partitions, "
            f"{result['seconds']} s of load, server in a {result['server']}\n"
            f"reads checked against the oracle: {result['reads_checked']} {result['reads_by_kind']}; "
            f"inconsistent: {len(result['inconsistent'])}; failed client operations: {len(result['failures'])}; "
            f"server requests: {result['server_requests']} (non-200: {result['server_errors']})")
    return "\n".join([head, _table("server side (access log: time inside the server)", result["server_table"]),
                      _table("client side (wall time per operation)", result["client_table"])]
                     + [f"FAILED: {f}" for f in result["failures"][:20]]
                     + [f"INCONSISTENT: {f}" for f in result["inconsistent"][:20]])


#: What the access records' cost is judged on (issue 26: query p99 within 10%), and what else is shown.
COMPARED = [("server", "POST .../{table}/query"), ("client", "raw query"), ("server", "GET .../{table}/version"),
            ("client", "client load_as_pandas")]


def compare(runs: list[dict[str, Any]]) -> str:
    """The same load with the access log table off and on, alternating: per operation, the p50
    and p99 of all runs of each kind pooled, and on / off."""
    pooled: dict[bool, dict[tuple[str, str], list[float]]] = {False: defaultdict(list), True: defaultdict(list)}
    for run in runs:
        for side, name in COMPARED:
            row = run[f"{side}_table"].get(name)
            pooled[run["access_records"]][(side, name)] += row["ms"] if row else []
    lines = ["access records off vs on (" + ", ".join("on" if r["access_records"] else "off" for r in runs)
             + " runs, pooled)",
             f"  {'operation':40} {'p50 off':>8} {'p50 on':>8} {'ratio':>6} {'p99 off':>8} {'p99 on':>8} {'ratio':>6}"]
    for side, name in COMPARED:
        off, on = pooled[False][(side, name)], pooled[True][(side, name)]
        p = [percentile(off, .5), percentile(on, .5), percentile(off, .99), percentile(on, .99)]
        lines.append(f"  {side + ' ' + name:40} {p[0]:>8.1f} {p[1]:>8.1f} {p[1] / p[0]:>6.2f} "
                     f"{p[2]:>8.1f} {p[3]:>8.1f} {p[3] / p[2]:>6.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sharing", description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--releases", type=int, default=8)
    parser.add_argument("--rows", type=int, default=400, help="rows per partition (3 partitions)")
    parser.add_argument("--max-seconds", type=float, default=360)
    parser.add_argument("--max-requests", type=int, default=20_000, help="per client")
    parser.add_argument("--think-ms", type=float, default=25, help="mean pause of a client between operations")
    parser.add_argument("--server", choices=("process", "thread"), default="process")
    parser.add_argument("--compare-access-records", type=int, default=0, metavar="N",
                        help="run the load 2N times, the access log table off and on in turn (process server), "
                             "and compare their latencies")
    parser.add_argument("--json", action="store_true", help="print the result as JSON too")
    args = parser.parse_args(argv)
    from waterline.engine.spark.session import get_session

    kinds = [False, True] * args.compare_access_records or [True]
    spark = get_session()
    try:
        runs = [run_load(spark, Path(tempfile.mkdtemp(prefix="wl-bench-sharing-")), clients=args.clients,
                         releases=args.releases, rows_per_partition=args.rows, max_seconds=args.max_seconds,
                         max_requests=args.max_requests, think_ms=args.think_ms, server_mode=args.server,
                         access_records=on, log=lambda m: print(m, file=sys.stderr, flush=True))
                for on in kinds]
    finally:
        spark.stop()
    for result in runs:
        print(("access records on" if result["access_records"] else "access records off") + ": " + report(result))
    if len(runs) > 1:
        print(compare(runs))
    result = runs[-1]
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if not k.endswith("_table")}
                         | {k: {n: {"count": r["count"], "errors": r["errors"], "p50_ms": percentile(r["ms"], .5),
                                    "p99_ms": percentile(r["ms"], .99)} for n, r in result[k].items()}
                            for k in ("server_table", "client_table")}, indent=1))
    return 0 if all(not r["failures"] and not r["inconsistent"] and not r["server_errors"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
