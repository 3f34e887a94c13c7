"""Tiny feeds in temporary folders for engine tests: spec, source files, tier reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Mapping

from waterline.clock import FixedClock
from waterline.spec import spec_from_dict

SCHEMA = "id BIGINT, event_time STRING, status STRING, embargo_until STRING, v STRING"
TRANSFORM = (
    # event_time stays text: waterline parses it and quarantines what does not parse.
    "SELECT id, event_time, status, try_cast(embargo_until AS TIMESTAMP) AS embargo_until, v FROM source"
)
PAYLOAD = ("id", "event_time", "status", "embargo_until", "v")


def make_spec(root: Path, tiers: Mapping[str, str], **overrides):
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
    return spec_from_dict(data, base_dir=root)


def write_partition(root: Path, partition: str, rows: Iterable[Mapping]) -> None:
    folder = root / "src" / partition
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.json"):
        old.unlink()
    with open(folder / "part-0.json", "w") as fh:
        for row in rows:
            fh.write(json.dumps(dict(row)) + "\n")


def read_tier(spark, spec, tier: str) -> dict[tuple, dict]:
    """Tier rows keyed by (partition, id); event times as µs for comparison with the oracle."""
    df = spark.read.format("delta").load(spec.tier_path(tier))
    rows = df.selectExpr(
        "_wl_partition", "id", "unix_micros(event_time) AS event_time", "status",
        "unix_micros(embargo_until) AS embargo_until", "v", "_wl_seq",
    ).collect()
    out = {}
    for r in rows:
        key = (r["_wl_partition"], r["id"])
        assert key not in out, f"duplicate identity {key} in tier {tier}"
        out[key] = r.asDict()
    return out


def far_future_clock() -> FixedClock:
    """A trusted clock far past every test instant, so --as-of decides W."""
    return FixedClock(4_000_000_000_000_000)
