"""Hypothesis draws over the extremes' domains (`tests.interop.extremes`), their expected tiers
by `waterline.semantics`, and the check of a table's file statistics against its files.

Event times come as µs (years 1 to 294247, Spark's last instant) and go to the source as
text, which Spark parses at any year; payload columns draw from every value the extremes'
rows hold, NULL included.
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from tests.engine.feedkit import iso_any_year, timestamps_as_micros
from tests.interop.extremes import SCHEMA, tame_rows, wild_rows
from waterline.semantics import POS_INF, Version, branch_interval, tier_state, visibility

MINUTE = 60_000_000
BASE_US = 1_767_261_600_000_000  # 2026-01-01T10:00:00Z
FIRST_US = -62_135_596_800_000_000  # 0001-01-01
LAST_US = 253_402_300_799_999_999  # 9999-12-31 23:59:59.999999
TIERS = {
    "all": "TRUE",
    "d10": "event_time + INTERVAL 10 MINUTES <= WATERLINE()",
    "win": "event_time <= WATERLINE() AND WATERLINE() < event_time + INTERVAL 30 MINUTES",
}
EPOCH = datetime(1970, 1, 1)
EVENT_US = st.sampled_from([FIRST_US, LAST_US, POS_INF, POS_INF - 5 * MINUTE, POS_INF - 20 * MINUTE - 1]) | \
    st.integers(0, 40).map(lambda minute: BASE_US + minute * MINUTE)
PAYLOAD = [name for name in SCHEMA.names if name not in ("id", "event_time")]


def _pool(name: str) -> list[Any]:
    values, seen = [None], set()
    for row in tame_rows() + wild_rows():
        value = row[name]
        if name == "f" and value is not None:  # as a FLOAT holds it, so it reads back equal
            value = pa.scalar(value, pa.float32()).as_py()
        marker = repr(value)
        if value is not None and marker not in seen:
            seen.add(marker)
            values.append(value)
    return values


POOLS = {name: _pool(name) for name in PAYLOAD}
VALUES = st.fixed_dictionaries({"event_us": EVENT_US, **{n: st.sampled_from(POOLS[n]) for n in PAYLOAD}})


def values_of(row: dict, event_us: int) -> dict:
    """A drawn row's values taken from one of the extremes' rows, at ``event_us``."""
    values = {"event_us": event_us, **{n: row[n] for n in PAYLOAD}}
    if values["f"] is not None:
        values["f"] = pa.scalar(values["f"], pa.float32()).as_py()
    return values


def source_row(key: int, values: dict) -> dict:
    """The source's row: ``event_time`` as text, the payload as drawn."""
    return {"id": key, "event_time": iso_any_year(values["event_us"]),
            **{n: values[n] for n in PAYLOAD}}


def tier_vis(tier: str, event_us: int) -> tuple:
    """The row's visibility under TIERS[tier], written in Python (the oracle's reading)."""
    if tier == "all":
        return visibility([branch_interval(True, [], [])])
    if tier == "d10":
        return visibility([branch_interval(True, [(event_us + 10 * MINUTE, False)], [])])
    return visibility([branch_interval(True, [(event_us, False)], [(event_us + 30 * MINUTE, True)])])


class ExtremesModel:
    """Versions of the one-partition feed, as DESIGN.md's ingest rule makes them."""

    def __init__(self) -> None:
        self.versions: list[Version] = []
        self.seq = 0
        self.current: dict[int, dict] = {}

    def ingest(self, output: dict[int, dict]) -> int:
        changed = [(k, v) for k, v in output.items() if _comparable(self.current.get(k)) != _comparable(v)]
        removed = [k for k in self.current if k not in output]
        if changed or removed:
            self.seq += 1
            self.versions += [Version(k, self.seq, v, {t: tier_vis(t, v["event_us"]) for t in TIERS})
                              for k, v in changed]
            self.versions += [Version(k, self.seq, None) for k in removed]
        self.current = dict(output)
        return len(changed) + len(removed)

    def tier(self, tier: str, w: int) -> dict[int, tuple]:
        return {k: _comparable(v.payload) for k, v in tier_state(self.versions, tier, w).items()}


def _micros(value: datetime) -> int:
    naive = value.astimezone(timezone.utc).replace(tzinfo=None) if value.tzinfo else value
    return (naive - EPOCH) // timedelta(microseconds=1)


def _normal(value: Any) -> Any:
    """One value as both sides compare it: NaN equal to itself, times as µs, nesting kept."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float):
        return (value, math.copysign(1.0, value))  # -0.0 is not 0.0 here
    if isinstance(value, datetime):
        return _micros(value)
    if isinstance(value, dict):
        return tuple(sorted((k, _normal(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_normal(v) for v in value)
    return value


def _comparable(values: dict | None) -> tuple | None:
    if values is None:
        return None
    return (values["event_us"], *(_normal(values[n]) for n in PAYLOAD))


def tier_rows(path: str) -> dict[int, tuple]:
    """The tier as deltalake reads it, in the model's form (timestamps as µs, any year)."""
    from waterline.engine.delta.storage import delta_table

    table = timestamps_as_micros(delta_table(path).to_pyarrow_table(columns=["id", "event_time", *PAYLOAD]))
    out = {}
    for r in table.to_pylist():
        out[r["id"]] = (r["event_time"], *(_normal(r[n]) for n in PAYLOAD))
    return out


# --- the statistics of a table's live files against the values in them ------------------------


def live_adds(path: str) -> dict[str, dict]:
    """Each live file's add action's statistics, from the table's JSON commits."""
    folder = os.path.join(path, "_delta_log")
    live: dict[str, dict] = {}
    for name in sorted(n for n in os.listdir(folder) if n.endswith(".json")):
        with open(os.path.join(folder, name), encoding="utf-8") as fh:
            for line in fh:
                action = json.loads(line)
                if "add" in action:
                    live[action["add"]["path"]] = json.loads(action["add"].get("stats") or "{}",
                                                             parse_float=Decimal)
                elif "remove" in action:
                    live.pop(action["remove"]["path"], None)
    return live


def _bound_us(text: str) -> int:
    """A timestamp bound's µs ("0001-01-01T00:00:00.000Z", NTZ without the Z)."""
    moment = datetime.strptime(text.rstrip("Z")[:23], "%Y-%m-%dT%H:%M:%S.%f")
    return _micros(moment)


def _holds(kind: pa.DataType, value: Any, low: Any, high: Any) -> bool:
    if pa.types.is_floating(kind):
        parse = {"Infinity": math.inf, "-Infinity": -math.inf}
        low, high = float(parse.get(low, low)), float(parse.get(high, high))
        return not math.isnan(value) and low <= value <= high
    if pa.types.is_timestamp(kind):  # the upper bound is written in ms: it covers its ms
        return _bound_us(low) <= value <= _bound_us(high) + 999
    if pa.types.is_date(kind):
        return low <= value.isoformat() <= high
    return low <= value <= high


def check_statistics(path: str, columns: Iterable[str]) -> int:
    """Every live file's numRecords, nullCount and bounds hold its rows; the files checked."""
    checked = 0
    for file, stats in live_adds(path).items():
        raw = pq.read_table(os.path.join(path, file), coerce_int96_timestamp_unit="us")
        data = timestamps_as_micros(raw)
        assert stats["numRecords"] == data.num_rows, file
        for name in columns:
            if name not in data.column_names:
                continue
            values = data.column(name).to_pylist()
            kind = raw.schema.field(name).type
            if pa.types.is_nested(kind) or pa.types.is_binary(kind):
                continue  # Delta keeps no single bound for these
            if name in stats.get("nullCount", {}):
                assert stats["nullCount"][name] == sum(v is None for v in values), (file, name)
            low = stats.get("minValues", {}).get(name)
            high = stats.get("maxValues", {}).get(name)
            if low is None and high is None:
                continue
            present = [v for v in values if v is not None]
            assert all(_holds(kind, v, low, high) for v in present), (file, name, low, high, present[:5])
        checked += 1
    return checked
