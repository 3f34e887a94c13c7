"""Deterministic demo source data for the `ticks` and `indicators` feeds.

Everything derives from ``random.Random`` seeded with (seed, feed, day), so a
day's file is byte-identical on every machine and does not depend on which
other days were written. Files land where `dags/feeds/*.yaml` read them:

    <root>/data/ticks/<day>/part-0.json            JSON lines
    <root>/data/indicators/<day>/indicators.csv    CSV with a header

Revisions model re-delivery of a partition. Ticks revision 1 re-sends the day
with some trades corrected (``status='correction'``, new price) and some
cancelled (``status='cancel'``; the `spark_jobs.ticks` step drops them, so the
trade disappears from the partition's output). Indicators revision 1 appends
revised figures (``revision=1``, new value) for some releases; the
`spark_jobs.indicators` step keeps the latest revision per (indicator, period).
"""

from __future__ import annotations

import csv
import io
import json
import random
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Iterable

DEFAULT_SEED = 20260105
# Monday to Wednesday, all NYSE sessions: three small partitions per feed.
DEMO_DAYS = ("2026-01-05", "2026-01-06", "2026-01-07")
TICKS_ROWS_PER_DAY = 300

# symbol -> opening price of the first demo day
SYMBOLS = {"AAPL": 243.0, "MSFT": 418.0, "NVDA": 138.0, "AMZN": 222.0, "GOOG": 191.0, "TSLA": 410.0}
# 14:30-21:00 UTC is the NYSE session in January (EST).
SESSION_OPEN_UTC = (14, 30)
SESSION_SECONDS = 6 * 3600 + 30 * 60
CORRECTION_RATE = 0.04
CANCEL_RATE = 0.02

# indicator -> (unit, typical value, typical absolute move, monthly or quarterly)
INDICATORS = {
    "CPI_YOY": ("percent", 2.9, 0.2, "M"),
    "CORE_CPI_YOY": ("percent", 3.2, 0.1, "M"),
    "NONFARM_PAYROLLS": ("thousands", 180.0, 60.0, "M"),
    "UNEMPLOYMENT_RATE": ("percent", 4.2, 0.1, "M"),
    "PPI_MOM": ("percent", 0.2, 0.2, "M"),
    "RETAIL_SALES_MOM": ("percent", 0.4, 0.4, "M"),
    "INITIAL_CLAIMS": ("thousands", 215.0, 15.0, "M"),
    "GDP_QOQ_SAAR": ("percent", 2.5, 0.8, "Q"),
}
INDICATORS_PER_DAY = 4
INDICATOR_COLUMNS = ("indicator", "period", "value", "unit", "release_date", "revision")


def ticks_path(root: str | Path, day: str) -> Path:
    """Where `write_ticks` puts ``day``'s file under ``root``."""
    return Path(root) / "data" / "ticks" / day / "part-0.json"


def indicators_path(root: str | Path, day: str) -> Path:
    """Where `write_indicators` puts ``day``'s file under ``root``."""
    return Path(root) / "data" / "indicators" / day / "indicators.csv"


def ticks_rows(day: str, revision: int = 0, *, seed: int = DEFAULT_SEED, rows: int = TICKS_ROWS_PER_DAY) -> list[dict]:
    """The trades of ``day`` as dicts (symbol, seq, price, size, ts, status), sorted by ts.

    ``ts`` is a naive ISO-8601 UTC string with milliseconds. Revision 1 has the
    same (symbol, seq) keys, with corrections and cancels applied.
    """
    _check_revision(revision)
    rng = random.Random(f"{seed}:ticks:{day}")
    day_start = datetime.combine(date.fromisoformat(day), datetime.min.time()).replace(
        hour=SESSION_OPEN_UTC[0], minute=SESSION_OPEN_UTC[1]
    )
    # Prices drift from day to day; offsets are drawn from the day's own stream.
    prices = {symbol: base * (1 + rng.uniform(-0.03, 0.03)) for symbol, base in SYMBOLS.items()}
    offsets_ms = sorted(rng.randrange(SESSION_SECONDS * 1000) for _ in range(rows))
    next_seq = {symbol: 1 for symbol in SYMBOLS}
    trades = []
    for offset in offsets_ms:
        symbol = rng.choice(list(SYMBOLS))
        prices[symbol] = max(1.0, prices[symbol] * (1 + rng.gauss(0, 0.0008)))
        ts = day_start + timedelta(milliseconds=offset)
        trades.append(
            {
                "symbol": symbol,
                "seq": next_seq[symbol],
                "price": round(prices[symbol], 2),
                "size": rng.choice((1, 1, 2, 3, 5, 10)) * 100,
                "ts": ts.isoformat(timespec="milliseconds"),
                "status": "new",
            }
        )
        next_seq[symbol] += 1
    if revision == 1:
        amend = random.Random(f"{seed}:ticks:{day}:revision-1")
        for trade in trades:
            draw = amend.random()
            if draw < CANCEL_RATE:
                trade["status"] = "cancel"
            elif draw < CANCEL_RATE + CORRECTION_RATE:
                trade["status"] = "correction"
                trade["price"] = round(trade["price"] + amend.choice((-1, 1)) * amend.randint(1, 25) / 100, 2)
    return trades


def write_ticks(
    root: str | Path, day: str, revision: int = 0, *, seed: int = DEFAULT_SEED, rows: int = TICKS_ROWS_PER_DAY
) -> Path:
    """Write (or rewrite) ``day``'s trades as JSON lines; returns the file path."""
    lines = (json.dumps(trade, separators=(",", ":")) for trade in ticks_rows(day, revision, seed=seed, rows=rows))
    return _write(ticks_path(root, day), "".join(line + "\n" for line in lines))


def indicator_rows(day: str, revision: int = 0, *, seed: int = DEFAULT_SEED) -> list[dict]:
    """Economic releases scheduled for ``day`` (its ``release_date``) as dicts.

    Values are strings, as a CSV reader sees them. Revision 1 keeps the
    revision-0 rows and adds a ``revision=1`` row with a changed value for
    about half of the releases.
    """
    _check_revision(revision)
    rng = random.Random(f"{seed}:indicators:{day}")
    release = date.fromisoformat(day)
    names = sorted(rng.sample(sorted(INDICATORS), INDICATORS_PER_DAY))
    rows = []
    for name in names:
        unit, typical, move, frequency = INDICATORS[name]
        value = typical + rng.uniform(-move, move)
        rows.append(
            {
                "indicator": name,
                "period": _reference_period(release, frequency),
                "value": f"{value:.1f}",
                "unit": unit,
                "release_date": day,
                "revision": "0",
            }
        )
    if revision == 1:
        revise = random.Random(f"{seed}:indicators:{day}:revision-1")
        for row in list(rows):
            if revise.random() < 0.5:
                unit, typical, move, _ = INDICATORS[row["indicator"]]
                delta = revise.choice((-1, 1)) * max(0.1, round(move * revise.uniform(0.1, 0.5), 1))
                rows.append(dict(row, value=f"{float(row['value']) + delta:.1f}", revision="1"))
    return rows


def write_indicators(root: str | Path, day: str, revision: int = 0, *, seed: int = DEFAULT_SEED) -> Path:
    """Write (or rewrite) ``day``'s releases as CSV with a header; returns the file path."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=INDICATOR_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(indicator_rows(day, revision, seed=seed))
    return _write(indicators_path(root, day), buffer.getvalue())


def write_demo_data(
    root: str | Path, days: Iterable[str] = DEMO_DAYS, revision: int = 0, *, seed: int = DEFAULT_SEED
) -> dict[str, list[Path]]:
    """Write both feeds' files for ``days``; returns ``{"ticks": [...], "indicators": [...]}``."""
    days = list(days)
    return {
        "ticks": [write_ticks(root, day, revision, seed=seed) for day in days],
        "indicators": [write_indicators(root, day, revision, seed=seed) for day in days],
    }


def _reference_period(release: date, frequency: str) -> str:
    """The period a release reports on: the previous month, or the previous quarter."""
    month_start = release.replace(day=1)
    previous = month_start - timedelta(days=1)
    if frequency == "M":
        return f"{previous.year:04d}-{previous.month:02d}"
    quarter = (release.month - 1) // 3  # the previous quarter, 0 meaning Q4 of last year
    return f"{release.year - 1}-Q4" if quarter == 0 else f"{release.year}-Q{quarter}"


def _check_revision(revision: int) -> None:
    if revision not in (0, 1):
        raise ValueError(f"revision must be 0 or 1, got {revision!r}")


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Write then rename, so a reader (or a crash) never sees half a file.
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
