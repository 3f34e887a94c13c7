"""Tiny feeds in temporary folders for engine tests: spec, source files, tier reads."""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from waterline.clock import FixedClock
from waterline.spec import spec_from_dict

SCHEMA = "id BIGINT, event_time STRING, status STRING, embargo_until STRING, v STRING"
TRANSFORM = (
    # event_time stays text: waterline parses it and quarantines what does not parse.
    "SELECT id, event_time, status, try_cast(embargo_until AS TIMESTAMP) AS embargo_until, v FROM source"
)
PAYLOAD = ("id", "event_time", "status", "embargo_until", "v")


def spec_dict(root: Path, tiers: Mapping[str, str], **overrides) -> dict:
    """A feed spec as plain data: JSON source files under <root>/src, warehouse <root>/wh."""
    data = {
        "feed": "f",
        "warehouse": str(root / "wh"),
        "source": {"format": "json", "path": str(root / "src" / "{partition}"), "options": {"schema": SCHEMA}},
        "partitions": {"static": ["a", "b", "c"]},
        "transform": TRANSFORM,
        "key": ["id"],
        "event_time": "event_time",
        "tiers": dict(tiers),
    }
    data.update(overrides)
    return data


def make_spec(root: Path, tiers: Mapping[str, str], **overrides):
    return spec_from_dict(spec_dict(root, tiers, **overrides), base_dir=root)


def write_partition(root: Path, partition: str, rows: Iterable[Mapping]) -> None:
    folder = root / "src" / partition
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.json"):
        old.unlink()
    with open(folder / "part-0.json", "w") as fh:
        for row in rows:
            fh.write(json.dumps(dict(row)) + "\n")


def read_tier(spark, spec, tier: str) -> dict[tuple, dict]:
    """Tier rows keyed by (partition, id), read with `deltalake` (an independent Delta reader).

    Timestamps come back as µs since the epoch, to compare with the oracle.
    """
    from waterline.engine.delta.storage import delta_table

    table = timestamps_as_micros(delta_table(spec.tier_path(tier)).to_pyarrow_table())
    out = {}
    for r in table.to_pylist():
        key = (r["_wl_partition"], r["id"])
        assert key not in out, f"duplicate identity {key} in tier {tier}"
        out[key] = r
    return out


def timestamps_as_micros(table):
    """Timestamp columns as µs integers, cast by Arrow: Python's datetime stops at year 9999,
    Spark's TIMESTAMP at 294247."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type):
            micros = table.column(i).cast(pa.timestamp("us", field.type.tz)).cast(pa.int64())
            table = table.set_column(i, field.name, micros)
    return table


def _micros(ts) -> int:
    from datetime import timezone

    ts = ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)
    delta = ts - ts.replace(year=1970, month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    return delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds


def iso_any_year(us: int) -> str:
    """``YYYY-MM-DD HH:MM:SS.ffffff`` (UTC) for any µs Spark holds, years past 9999 included
    (Spark parses them as text); proleptic Gregorian, as Spark's calendar."""
    days, rest = divmod(us, 86_400_000_000)
    # days since 1970-01-01 to a civil date (H. Hinnant's days_from_civil, inverted)
    z = days + 719_468
    era, doe = divmod(z, 146_097)
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day, month = doy - (153 * mp + 2) // 5 + 1, mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    seconds, micros = divmod(rest, 1_000_000)
    return (f"{year:04d}-{month:02d}-{day:02d} {seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
            f".{micros:06d}")


def far_future_clock() -> FixedClock:
    """A trusted clock far past every test instant, so --as-of decides W."""
    return FixedClock(4_000_000_000_000_000)


@contextmanager
def local_reads(limit: str | None) -> Iterator[None]:
    """``WATERLINE_LOCAL_ROWS`` set to ``limit`` in the block (None: unset, the default):
    "0" makes every release and stream batch read and write with Spark jobs
    (`waterline.engine.spark.local_frames`)."""
    from waterline.engine.spark.local_frames import LOCAL_ROWS_ENV

    saved = os.environ.pop(LOCAL_ROWS_ENV, None)
    if limit is not None:
        os.environ[LOCAL_ROWS_ENV] = limit
    try:
        yield
    finally:
        os.environ.pop(LOCAL_ROWS_ENV, None)
        if saved is not None:
            os.environ[LOCAL_ROWS_ENV] = saved
