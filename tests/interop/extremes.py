"""A feed whose payload holds the values at the edges of every column type Spark holds.

Two partitions: ``tame`` holds extremes every file statistic can bound (year-1 and
year-9999 dates and timestamps, ±Inf, -0.0, subnormal doubles, DECIMAL(38, s) at its
limits, BIGINT's limits, empty, NUL-bearing, non-BMP, path- and SQL-looking strings,
strings of U+10FFFF, binary, nested columns, an always-NULL column); ``wild`` adds the
values no bound can be written for (NaN, ``9999-12-31 23:59:59.999999``, a 100 KB
string, an ``event_time`` at 9999-12-31 23:59:59.999999, and one at 0001-01-01), so its
files carry none. Sources are Parquet files written with pyarrow;
``event_time`` stays text, as in `tests.engine.feedkit`.
"""

from __future__ import annotations

import math
from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests.engine.feedkit import make_spec

UTC = timezone.utc
DEC_MAX = Decimal("9" * 36 + ".99")
SMALL_MAX = Decimal("0." + "9" * 38)
DEC_MIN = Decimal("-" + "9" * 36 + ".99")  # not -DEC_MAX: negation rounds to 28 digits
SMALL_MIN = Decimal("-0." + "9" * 38)
FIRST = datetime(1, 1, 1)
LAST = datetime(9999, 12, 31, 23, 59, 59, 999999)
LAST_MS = datetime(9999, 12, 31, 23, 59, 59, 999000)

SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("event_time", pa.string()),
    ("big", pa.int64()),
    ("n", pa.int32()),
    ("flag", pa.bool_()),
    ("d", pa.float64()),
    ("f", pa.float32()),
    ("dec", pa.decimal128(38, 2)),
    ("frac", pa.decimal128(38, 38)),
    ("ts", pa.timestamp("us", "UTC")),
    ("ntz", pa.timestamp("us")),
    ("day", pa.date32()),
    ("s", pa.string()),
    ("bin", pa.binary()),
    ("nothing", pa.string()),
    ("st", pa.struct([("x", pa.int64()), ("y", pa.string())])),
    ("arr", pa.list_(pa.int64())),
    ("m", pa.map_(pa.string(), pa.int64())),
])
#: Columns a filtered read is checked on (nested ones are payload only).
FILTERED = ("id", "event_time", "big", "n", "flag", "d", "f", "dec", "frac", "ts", "ntz", "day", "s", "bin", "nothing")


def _row(i: int, minute: int, event_time: str | None = None, **values) -> dict:
    row = {name: None for name in SCHEMA.names}
    row.update(id=i, event_time=event_time or f"2026-01-01 10:{minute:02d}:00", **values)
    return row


def tame_rows() -> list[dict]:
    """Extremes every statistic bounds."""
    return [
        _row(1, 0, big=-2**63, n=-2**31, flag=True, d=-math.inf, f=-3.4028234663852886e38, dec=DEC_MIN,
             frac=SMALL_MIN, ts=FIRST.replace(tzinfo=UTC), ntz=FIRST, day=date(1, 1, 1), s="",
             bin=b"", st={"x": -2**63, "y": ""}, arr=[], m=[]),
        _row(2, 1, big=2**63 - 1, n=2**31 - 1, flag=False, d=math.inf, f=math.inf, dec=DEC_MAX, frac=SMALL_MAX,
             ts=LAST_MS.replace(tzinfo=UTC), ntz=LAST_MS, day=date(9999, 12, 31), s="\U0010ffff" * 40,
             bin=b"\x00\xff" * 3, st={"x": 2**63 - 1, "y": "\U0001f600"}, arr=[2**63 - 1, None], m=[("k", 1)]),
        _row(3, 2, big=0, n=0, flag=None, d=-0.0, f=-0.0, dec=Decimal("0.00"), frac=Decimal(0),
             ts=datetime(2026, 1, 1, 10, 0, 0, 123456, tzinfo=UTC), ntz=datetime(2026, 1, 1, 10, 0, 0, 123456),
             day=date(2026, 1, 1), s="a\x00b \U0001f600\U0001d11e", bin=b"\x00",
             st=None, arr=None, m=None),
        _row(4, 3, big=1, n=1, flag=True, d=5e-324, f=1e-45, dec=Decimal("1.50"), frac=Decimal("1e-38"),
             ts=datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), ntz=datetime(1969, 12, 31, 23, 59, 59, 999999),
             day=date(1970, 1, 1), s="../../etc/passwd'; DROP TABLE t; --" + "z" * 40, bin=b"/..",
             st={"x": None, "y": None}, arr=[1, 2], m=[("a\x00", None)]),
    ]


def wild_rows() -> list[dict]:
    """Values no bound can be written for, beside ordinary ones."""
    return [
        _row(5, 4, "9999-12-31 23:59:59.999999", big=7, n=7, flag=False, d=math.nan, f=math.nan, dec=Decimal("-0.01"), frac=Decimal("0.5"),
             ts=LAST.replace(tzinfo=UTC), ntz=LAST, day=date(2000, 2, 29), s="x" * 100_000 + "y",
             bin=b"\xff" * 5000, st={"x": 1, "y": "y" * 100_000}, arr=[None], m=[("", 0)]),
        _row(6, 5, big=-7, n=-7, flag=True, d=2.5, f=2.5, dec=Decimal("2.00"), frac=Decimal("-0.5"),
             ts=datetime(2026, 1, 1, tzinfo=UTC), ntz=datetime(2026, 1, 1), day=date(2026, 1, 2), s="NVDA",
             bin=None, st=None, arr=None, m=None),
        _row(7, 6, "0001-01-01 00:00:00", s="first"),
    ]


def write_source(root: Path, partition: str, rows: list[dict]) -> None:
    folder = root / "src" / partition
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.parquet"):
        old.unlink()
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), folder / "part-0.parquet")


TIERS = {"all": "TRUE"}
TRANSFORM = "SELECT * FROM source"


def extreme_spec(root: Path, tiers: dict[str, str] | None = None, **overrides):
    """The feed's spec: Parquet sources under ``root``/src, partitions tame and wild."""
    return make_spec(root, tiers or TIERS, source={"format": "parquet", "path": str(root / "src" / "{partition}")},
                     transform=TRANSFORM, partitions={"static": ["tame", "wild"]}, **overrides)
