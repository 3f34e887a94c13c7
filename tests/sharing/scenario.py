"""The sharing scenario's rows, and turning what a Delta Sharing client returns into the
oracle's shape (shared by the local, S3 and load tests and by bench/sharing.py)."""

from __future__ import annotations

import pandas as pd

from tests.engine.feedkit import PAYLOAD
from tests.engine.model import MINUTE

BASE_US = 1_767_261_600_000_000  # 2026-01-01T10:00:00Z
SECRET = "NEVER-RELEASED"


def iso(us: int) -> str:
    from waterline.clock import format_instant

    return format_instant(us).replace("T", " ").rstrip("Z")


def row(i, minute, v, emb_minute=None, status="final"):
    return {"id": i, "event_time": BASE_US + minute * MINUTE, "status": status,
            "embargo_until": None if emb_minute is None else BASE_US + emb_minute * MINUTE, "v": v}


def source(r):
    """A row as the JSON source file holds it (timestamps as text)."""
    return {**r, "event_time": iso(r["event_time"]),
            "embargo_until": None if r["embargo_until"] is None else iso(r["embargo_until"])}


# A row whose event and embargo are far in the future: due in no tier during the test.
UNRELEASED = row(99, 100_000, SECRET, emb_minute=100_000)
STEPS = [
    # (rows of partition a, release at minute)
    ([row(1, 0, "x", 30), row(2, 5, "y"), row(3, 20, "z", 10), UNRELEASED], 15),
    ([row(1, 0, "x2", 30), row(3, 20, "z", 10), row(4, 12, "w", 20), UNRELEASED], 25),  # revise, remove 2
    (None, 45),  # no ingest: `win` expires rows (W passes event_time + 30 minutes)
]


def _us(value) -> int | None:
    if value is None or pd.isna(value):
        return None
    return pd.Timestamp(value).value // 1000


def rows(df: pd.DataFrame) -> dict:
    """{(partition, id): (payload, seq)} of a client's DataFrame, as `expected_tier` gives it."""
    out = {}
    for r in df.to_dict("records"):
        payload = tuple(
            _us(r[c]) if c in ("event_time", "embargo_until") else (None if pd.isna(r[c]) else r[c]) for c in PAYLOAD
        )
        payload = (int(payload[0]),) + payload[1:]
        key = (r["_wl_partition"], int(r["id"]))
        assert key not in out, f"duplicate identity {key}"
        out[key] = (payload, int(r["_wl_seq"]))
    return out


def replay(changes: pd.DataFrame) -> dict:
    """The rows a change feed (``load_table_changes_as_pandas``) leaves when applied in order."""
    state: dict = {}
    for _, r in changes.sort_values("_commit_version", kind="stable").iterrows():
        key = (r["_wl_partition"], int(r["id"]))
        if r["_change_type"] in ("insert", "update_postimage"):
            state[key] = r
        elif r["_change_type"] == "delete":
            state.pop(key, None)
    return rows(pd.DataFrame(list(state.values()))) if state else {}


def url(profiles: dict, recipient: str, tier: str, share: str = "f") -> str:
    return f"{profiles[recipient]}#{share}.tiers.{tier}"


def run_scenario(root, spec, feed, model, audiences: dict, read) -> list[dict]:
    """Run `STEPS` (ingest, release); after each release check that ``read(recipient, tier)``
    (a DataFrame from a Delta Sharing client) equals the oracle for every recipient's tier.
    Returns, per release, {tier: (table version, the oracle's rows)}."""
    from tests.engine.feedkit import write_partition
    from tests.engine.model import expected_tier
    from waterline.engine.delta.table_log import TableLog

    seen = []
    for step_rows, minute in STEPS:
        if step_rows is not None:
            write_partition(root, "a", [source(r) for r in step_rows])
            feed.ingest("a")
            model.ingest("a", step_rows)
        w = BASE_US + minute * MINUTE
        feed.release(as_of=w)
        seen.append({t: (TableLog.open(spec.tier_path(t)).version, expected_tier(model, t, w)) for t in spec.tiers})
        for recipient, tiers in audiences.items():
            for tier in tiers:
                got = rows(read(recipient, tier))
                assert got == expected_tier(model, tier, w), f"{recipient} {tier} at minute {minute}"
    return seen
