"""`waterline demo`: the whole story on local data, stepped through time.

Two demo feeds (`dags/feeds/ticks.yaml`, `dags/feeds/indicators.yaml`) read
deterministic source files that `waterline.demo_data` writes under ``root``;
their warehouse is ``<root>/warehouse``, wiped first so every run prints the
same story. Each step may ingest partitions, then releases the feeds it is
about with ``as_of`` set to the step's instant: the trusted clock is the real one
(far after the demo days), so the as-of instant decides W. The instants only
move forward, as a waterline does.

Per step the demo prints, per tier, what the release did (TierRelease counts:
rows gained, updated, lost, expired) and the tier's row count after it (read
from the Delta table with `deltalake`, no Spark). It ends with `waterline status` for both feeds. See docs/demo.md.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable
from zoneinfo import ZoneInfo

import pyarrow.dataset as ds

import waterline
from waterline.cli import render
from waterline.clock import Clock, parse_instant
from waterline.demo_data import DEFAULT_SEED, indicator_rows, ticks_rows, write_demo_data, write_indicators, write_ticks
from waterline.errors import WaterlineError
from waterline.feed import Feed
from waterline.semantics import NEG_INF
from waterline.spec import FeedSpec, load_spec

DEFAULT_ROOT = ".waterline/demo"
FEEDS = ("ticks", "indicators")
NEW_YORK = ZoneInfo("America/New_York")

Echo = Callable[[str], None]


@dataclass(frozen=True)
class Step:
    """One moment of the story: ingest (feed, partition, revision)s, then release ``feeds`` at ``as_of``."""

    as_of: str  # ISO-8601 with the New York offset, as a reader would say it
    title: str
    feeds: tuple[str, ...]
    ingests: tuple[tuple[str, str, int], ...] = ()
    show: tuple[str, ...] = ()  # extra views printed after the release (see _SHOWS)


MON, TUE = "2026-01-05", "2026-01-06"

# The story. Trades are 14:30-21:00 UTC (09:30-16:00 EST); indicators are
# embargoed to 08:30 EST (13:30 UTC) on their release date. Only the feeds a
# step is about are released in it (each release costs Spark jobs); a feed not
# released keeps its W_T until its next step, which catches it up.
STEPS: tuple[Step, ...] = (
    Step("2026-01-05T08:29:00-05:00",
         "Monday 08:29, a minute before the embargo: Monday's and Tuesday's economic figures arrive early",
         feeds=("indicators",), ingests=(("indicators", MON, 0), ("indicators", TUE, 0))),
    Step("2026-01-05T08:30:00-05:00",
         "Monday 08:30 New York: the embargo lifts for subscribers; the public waits a day",
         feeds=("indicators",)),
    Step("2026-01-05T16:00:00-05:00",
         "Monday 16:00, the closing bell: the day's trades are processed once and released",
         feeds=("ticks",), ingests=(("ticks", MON, 0),)),
    Step("2026-01-06T08:30:00-05:00",
         "Tuesday 08:30: Tuesday's figures for subscribers, Monday's for the public",
         feeds=("indicators",)),
    Step("2026-01-06T16:05:00-05:00",
         "Tuesday 16:05: Tuesday's trades; Monday's fall out of the last 24 hours",
         feeds=("ticks",), ingests=(("ticks", TUE, 0),)),
    Step("2026-01-06T17:00:00-05:00",
         "Tuesday 17:00, revisions: Monday's trades re-sent with corrections and cancels, Tuesday's figures revised",
         feeds=("ticks", "indicators"), ingests=(("ticks", MON, 1), ("indicators", TUE, 1)),
         show=("revised_trades", "revised_figures")),
    Step("2026-01-07T08:30:00-05:00",
         "Wednesday 08:30: the public gets Tuesday's figures, already revised",
         feeds=("indicators",), show=("revised_figures",)),
)


@dataclass
class DemoReport:
    """What `run_demo` did: per step, per feed, the release result and the tiers' row counts."""

    root: Path
    steps: list[dict] = field(default_factory=list)
    seconds: float = 0.0


# -- set-up ----------------------------------------------------------------

def find_repo(start: Path | None = None) -> Path:
    """The folder holding `dags/feeds/*.yaml` and `spark_jobs/`: the working directory or the source checkout."""
    candidates = [start or Path.cwd(), Path(waterline.__file__).resolve().parents[2]]
    for folder in candidates:
        if (folder / "dags" / "feeds" / "ticks.yaml").is_file() and (folder / "spark_jobs").is_dir():
            return folder.resolve()
    raise WaterlineError("demo: cannot find dags/feeds/ticks.yaml and spark_jobs/; run it from the repository root")


def demo_specs(root: Path, repo: Path) -> dict[str, FeedSpec]:
    """The demo specs, with warehouse and source paths moved under ``root``."""
    specs = {}
    for feed in FEEDS:
        overrides = {
            "warehouse": str(root / "warehouse"),
            # demo_data writes <root>/data/<feed>/<day>/...; the specs say .waterline/data/<feed>/{partition}/
            "source": {"path": str(root / "data" / feed / "{partition}") + "/"},
        }
        # base_dir = repo: the spec's `job: spark_jobs...` is imported from there.
        specs[feed] = load_spec(repo / "dags" / "feeds" / f"{feed}.yaml", base_dir=repo, overrides=overrides)
    return specs


def write_sources(root: Path) -> int:
    """Write revision 0 of the demo days both feeds use; revisions are written when a step ingests them."""
    written = write_demo_data(root, (MON, TUE))
    return sum(len(v) for v in written.values())


def _write_revision(root: Path, feed: str, day: str, revision: int) -> None:
    (write_ticks if feed == "ticks" else write_indicators)(root, day, revision)


def read_tier(feed: Feed, tier: str, partition: str | None = None, columns: list[str] | None = None) -> list[dict]:
    """A tier table's rows, read without Spark (the tables are tiny)."""
    rows = feed.read(tier)
    if partition is not None:
        rows = rows.filter(ds.field("_wl_partition") == partition)
    return (rows if columns is None else rows.select(columns)).to_pylist()


# -- formatting --------------------------------------------------------------

def new_york(us: int) -> str:
    moment = datetime.fromtimestamp(us / 1e6, tz=timezone.utc).astimezone(NEW_YORK)
    return moment.strftime("%a %Y-%m-%d %H:%M %Z")


def _when(us: int | None) -> str | None:
    if us is None:
        return None
    return "now" if us <= NEG_INF else render.instant(us)


def step_table(rows: list[tuple]) -> str:
    return render.table(["feed", "tier", "W_T", "rows", "gained", "updated", "lost", "(expired)", "next due"], rows)


# -- the story ---------------------------------------------------------------

def run_demo(root: str | Path = DEFAULT_ROOT, echo: Echo = print, *, spark=None, repo: str | Path | None = None,
             clock: Clock | None = None) -> DemoReport:
    """Run the demo under ``root``, printing through ``echo``; returns what happened.

    ``spark`` defaults to the feeds' own session (started quietly: the JVM's
    output goes to its log file); ``repo`` (where `dags/feeds` and `spark_jobs`
    live) to the working directory or the source checkout; ``clock`` to the
    system clock (the as-of instants are all in its past).
    """
    started = time.monotonic()
    root = Path(root).absolute()
    repo = Path(repo).resolve() if repo is not None else find_repo()
    for sub in ("warehouse", "data"):  # start fresh, so a rerun prints the same story
        shutil.rmtree(root / sub, ignore_errors=True)
    specs = demo_specs(root, repo)
    feeds = {name: Feed(spec, spark=spark, clock=clock) for name, spec in specs.items()}
    report = DemoReport(root=root)

    echo(f"waterline demo: two feeds on local data under {root} (seed {DEFAULT_SEED})")
    for feed, spec in specs.items():
        echo(f"  {feed}: " + "; ".join(f"{t}: {p}" for t, p in spec.tiers.items()))
    files = write_sources(root)
    echo(f"  wrote {files} source files ({MON} and {TUE}, revision 0) under {root / 'data'}")
    echo("  the trusted clock is the real one, past every demo day: each release's as-of instant is its W")

    if spark is None:
        echo("  starting Spark ...")
        first = next(iter(feeds.values()))
        spark = first.spark
        feeds = {name: Feed(spec, spark=spark, clock=clock) for name, spec in specs.items()}
        if first.jvm_log is not None:
            echo(f"  (the JVM's own output goes to {first.jvm_log})")
    shuffle = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")  # a few hundred rows: one task per stage
    try:
        for number, step in enumerate(STEPS, 1):
            as_of = parse_instant(step.as_of)
            echo("")
            echo(f"[{number}] {new_york(as_of)} ({render.instant(as_of)}): {step.title}")
            for feed, day, revision in step.ingests:
                if revision:
                    _write_revision(root, feed, day, revision)
                result = feeds[feed].ingest(day)
                echo("    " + render.ingest_line(result) + (f" (revision {revision})" if revision else ""))
            table_rows = []
            record = {"as_of_us": as_of, "title": step.title, "releases": {}, "rows": {}}
            for feed in step.feeds:
                result = feeds[feed].release(as_of=as_of)
                record["releases"][feed] = result
                record["rows"][feed] = {}
                for tier, t in result.tiers.items():
                    rows = record["rows"][feed][tier] = feeds[feed].read(tier, columns=["_wl_partition"]).num_rows
                    table_rows.append((feed, tier, render.instant(t.w_us), rows, t.released, t.updated,
                                       t.removed, t.expired, _when(t.next_due_us)))
            echo(render.indent(step_table(table_rows), "    "))
            for name in step.show:
                for line in _SHOWS[name](feeds):
                    echo("    " + line)
            report.steps.append(record)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", shuffle)

    echo("")
    echo("waterline status (no Spark; lag and due are against the real clock)")
    for feed in feeds.values():
        echo(render.indent(render.status_table(feed.status()), "    "))
    report.seconds = time.monotonic() - started
    echo("")
    echo(f"demo finished in {report.seconds:.0f}s; the tier tables are Delta tables in {root / 'warehouse'}/<feed>/tiers/")
    return report


# -- extra views ---------------------------------------------------------------

def _show_revised_trades(feeds: dict[str, Feed]) -> list[str]:
    """Monday's re-sent trades: cancels are gone from the tiers, corrections carry the new price."""
    before = {(t["symbol"], t["seq"]): t["price"] for t in ticks_rows(MON, 0)}
    after = ticks_rows(MON, 1)
    cancels = [(t["symbol"], t["seq"]) for t in after if t["status"] == "cancel"]
    corrections = [(t["symbol"], t["seq"], before[(t["symbol"], t["seq"])], t["price"])
                   for t in after if t["status"] == "correction"]
    tiers = {tier: {(r["symbol"], r["seq"]): r["price"]
                    for r in read_tier(feeds["ticks"], tier, MON, ["symbol", "seq", "price"])}
             for tier in feeds["ticks"].tiers}
    lines = [f"{MON} revision 1: {len(corrections)} corrections, {len(cancels)} cancels; "
             "cancelled trades still in a tier: "
             + ", ".join(f"{tier} {sum(k in rows for k in cancels)}" for tier, rows in tiers.items())]
    for symbol, seq, old, new in corrections[:2]:
        lines.append(f"correction {symbol} #{seq}: price {old} -> {new}; realtime shows "
                     f"{tiers['realtime'].get((symbol, seq))}, last_24h {tiers['last_24h'].get((symbol, seq), '-')}")
    for symbol, seq in cancels[:2]:
        lines.append(f"cancel {symbol} #{seq}: in realtime: {'yes' if (symbol, seq) in tiers['realtime'] else 'no'}")
    return lines


def _show_revised_figures(feeds: dict[str, Feed]) -> list[str]:
    """Tuesday's figures as each indicators tier shows them, next to the first and revised values."""
    first = {(r["indicator"], r["period"]): r["value"] for r in indicator_rows(TUE, 0)}
    revised = {(r["indicator"], r["period"]): r["value"] for r in indicator_rows(TUE, 1) if r["revision"] == "1"}
    seen = {tier: {(r["indicator"], r["period"]): r["value"]
                   for r in read_tier(feeds["indicators"], tier, TUE, ["indicator", "period", "value"])}
            for tier in feeds["indicators"].tiers}
    rows = [(i, p, first[(i, p)], revised.get((i, p)), *(_fmt(seen[t].get((i, p))) for t in seen))
            for i, p in sorted(first)]
    table = render.table(["indicator", "period", "first", "revised", *seen], rows)
    return [f"{TUE} figures as each tier shows them:"] + table.splitlines()


def _fmt(value) -> str | None:
    return None if value is None else f"{value:.1f}"


_SHOWS = {"revised_trades": _show_revised_trades, "revised_figures": _show_revised_figures}
