"""`waterline demo --stream`: a tick stream on a local broker, its tiers following it.

A Kafka broker (KRaft, 127.0.0.1, `waterline.local.kafka_broker`) under
``<root>/kafka``, wiped first with the warehouse, and `Feed.stream` running long in a
thread, as `waterline stream SPEC` runs. The story runs on a demo clock: Monday
2026-01-05 from 09:30 New York, ``speed`` times faster than the wall clock, so the
15-minute tier's instants come within the demo (the clock is what releases read, and
what each tick's event time says). Every round produces new trades, a correction (a
later record of a trade's key with another price) and now and then a cancel (a
tombstone); the lines printed show the real-time tier following within seconds and
the 15-minute tier holding each trade until its event time plus 15 minutes.

Each round checks the 15-minute tier against the demo clock: its newest trade must be
at least 15 minutes old. At the end the real-time tier must equal every live trade.
The demo fails otherwise. (`waterline audit` compares a release's commit time, which is
the wall clock's, with the due instants, which are the demo clock's: it cannot judge a
demo run faster than real time, so the demo checks the tier itself.) See docs/demo.md.
"""

from __future__ import annotations

import json
import random
import shutil
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

from confluent_kafka import Producer

from waterline.clock import parse_instant
from waterline.local import kafka_broker
from waterline.errors import WaterlineError
from waterline.feed import Feed
from waterline.spec import spec_from_dict

Echo = Callable[[str], None]
START = "2026-01-05T09:30:00-05:00"  # the opening bell, New York
EST = timezone(timedelta(hours=-5))
TOPIC = "ticks"
ROUND_SECONDS = 2.0
DELAY_US = 15 * 60 * 1_000_000


class DemoClock:
    """The demo's trusted clock: ``start`` plus the wall time since it was made, ``speed`` times over."""

    def __init__(self, start: str, speed: float) -> None:
        self.start_us = parse_instant(start, now_us=0)
        self.speed = speed
        self.wall0 = time.monotonic()

    def restart(self) -> None:
        """Back to ``start``, from now on (the demo's first round)."""
        self.wall0 = time.monotonic()

    def now_us(self) -> int:
        return self.start_us + int((time.monotonic() - self.wall0) * self.speed * 1e6)


def _spec(root: Path, bootstrap: str) -> dict:
    return {
        "feed": "ticks_stream", "warehouse": str(root / "warehouse"), "timezone": "America/New_York",
        "source": {"format": "kafka", "bootstrap": bootstrap, "topic": TOPIC,
                   "value": {"format": "json", "schema": "sym STRING, px DOUBLE, ts STRING"}},
        "partitions": {"daily": {"start": "2026-01-01"}},
        "transform": "SELECT CAST(key AS STRING) AS trade_id, value.sym AS sym, value.px AS px, "
                     "CAST(value.ts AS TIMESTAMP) AS event_time FROM source",
        "partition_by": "CAST(to_date(event_time) AS STRING)",
        "remove_when": "value IS NULL",
        "key": ["trade_id"], "event_time": "event_time",
        "tiers": {"realtime": "TRUE", "delayed_15m": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"},
    }


def _iso(us: int) -> str:
    return datetime.fromtimestamp(us / 1e6, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _hhmm(us: int) -> str:
    """``us`` as New York's wall clock in January (EST), to the second."""
    return datetime.fromtimestamp(us / 1e6, timezone.utc).astimezone(EST).strftime("%H:%M:%S")


def run_stream_demo(root: str, *, seconds: float = 90.0, speed: float = 30.0, seed: int = 7,
                    echo: Echo = print) -> None:
    """Run the stream demo under ``root`` for ``seconds`` of producing (see the module)."""
    folder = Path(root)
    if folder.exists():
        kafka_broker.stop(folder / "kafka")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    echo(f"starting a Kafka broker under {folder / 'kafka'} ...")
    broker = kafka_broker.start(folder / "kafka")
    stop = threading.Event()
    streaming = None
    try:
        kafka_broker.create_topic(broker.bootstrap, TOPIC, partitions=1)
        clock = DemoClock(START, speed)
        feed = Feed(spec_from_dict(_spec(folder, broker.bootstrap)), clock=clock)
        echo("starting Spark ...")
        feed.spark  # the JVM starts before the bell: the demo clock runs from the first round
        failures: list[BaseException] = []

        def stream() -> None:
            try:
                feed.stream(once=False, stop=stop)
            except BaseException as exc:  # reported by the main thread
                failures.append(exc)

        streaming = threading.Thread(target=stream, name="waterline-stream-demo", daemon=True)
        streaming.start()
        clock.restart()
        live, early = _produce_rounds(broker.bootstrap, clock, seconds, seed, feed, echo, failures)
        echo("producing stopped; waiting for the real-time tier to hold every live trade ...")
        deadline = time.monotonic() + 180
        while _tier(feed, "realtime") != live and time.monotonic() < deadline and not failures:
            time.sleep(1)
        stop.set()
        streaming.join(timeout=300)
        if failures:
            raise WaterlineError(f"stream demo: the stream failed: {str(failures[0]).splitlines()[0]}")
        _verdict(feed, live, early, clock, echo)
    finally:
        stop.set()
        if streaming is not None and streaming.is_alive():
            streaming.join(timeout=120)
        kafka_broker.stop(folder / "kafka")


def _produce_rounds(bootstrap: str, clock: DemoClock, seconds: float, seed: int, feed: Feed, echo: Echo,
                    failures: list) -> tuple[dict[str, float], list[str]]:
    """Trades, corrections and cancels every round until ``seconds`` pass (or the stream
    failed: ``failures``); the live trades' prices, and the 15-minute tier rows seen younger
    than 15 minutes on the demo clock (early: none, if the tier is right)."""
    # the producer lives as long as this call: gone before the broker stops
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    rng = random.Random(seed)
    live: dict[str, float] = {}
    early: list[str] = []
    n = 0
    echo(f"{'clock':>8}  {'sent':>4} {'fixes':>5} {'cancels':>7}   {'realtime':>8}   {'15-min tier':>11}  newest in 15-min tier")
    sent = fixes = cancels = 0
    ends = time.monotonic() + seconds
    while time.monotonic() < ends and not failures:
        now = clock.now_us()
        records = []
        for _ in range(3):
            n += 1
            trade, px = f"T{n:04d}", round(rng.uniform(99, 101), 2)
            records.append((trade, {"sym": rng.choice(("ACME", "GLOBX")), "px": px, "ts": _iso(now)}))
            live[trade] = px
            sent += 1
        if live and rng.random() < 0.7:  # a correction: the same trade, another price, the same event time
            trade = rng.choice(sorted(live))
            px = round(live[trade] + rng.choice((-0.05, 0.05)), 2)
            records.append((trade, {"sym": "ACME", "px": px, "ts": _iso(now)}))
            live[trade] = px
            fixes += 1
        if len(live) > 3 and rng.random() < 0.3:  # a cancel: a tombstone removes the trade
            trade = rng.choice(sorted(live))
            records.append((trade, None))
            del live[trade]
            cancels += 1
        for key, value in records:
            producer.produce(TOPIC, key=key.encode(), value=None if value is None else json.dumps(value).encode())
        producer.flush(30)
        (delayed, newest), held_back = _delayed(feed), clock.now_us() - DELAY_US
        if newest is not None and newest > held_back:
            early.append(f"{_hhmm(newest)} at {_hhmm(held_back + DELAY_US)}")
        echo(f"{_hhmm(now):>8}  {sent:>4} {fixes:>5} {cancels:>7}   {len(_tier(feed, 'realtime')):>8}   "
             f"{delayed:>11}  {'-' if newest is None else _hhmm(newest)}")
        time.sleep(ROUND_SECONDS)
    return live, early


def _rows(feed: Feed, tier: str, columns: list[str]) -> list[dict]:
    """The tier's rows (none before its table exists: the first batch creates it)."""
    try:
        return feed.read(tier, columns=columns).to_pylist()
    except WaterlineError:
        return []


def _tier(feed: Feed, tier: str) -> dict[str, float]:
    return {r["trade_id"]: r["px"] for r in _rows(feed, tier, ["trade_id", "px"])}


def _delayed(feed: Feed) -> tuple[int, int | None]:
    """The 15-minute tier's row count and newest event time (µs; None while it has no row),
    from one read."""
    times = [r["event_time"] for r in _rows(feed, "delayed_15m", ["event_time"])]
    newest = max((int(t.replace(tzinfo=t.tzinfo or timezone.utc).timestamp() * 1e6) for t in times), default=None)
    return len(times), newest


def _verdict(feed: Feed, live: dict[str, float], early: list[str], clock: DemoClock, echo: Echo) -> None:
    realtime = _tier(feed, "realtime")
    delayed, newest = _delayed(feed)
    if newest is not None and newest > clock.now_us() - DELAY_US:
        early.append(f"{_hhmm(newest)} at {_hhmm(clock.now_us())}")
    echo(f"real-time tier: {len(realtime)} trades, equal to every live trade produced: {realtime == live}")
    echo(f"15-minute tier: {delayed} trades, the newest from "
         f"{'-' if newest is None else _hhmm(newest)} at {_hhmm(clock.now_us())}; rows early: {len(early)}")
    if realtime != live:
        raise WaterlineError(f"stream demo: the real-time tier has {len(realtime)} trades, not the {len(live)} live ones")
    if early:
        raise WaterlineError(f"stream demo: the 15-minute tier showed trades early: {', '.join(early[:5])}")
