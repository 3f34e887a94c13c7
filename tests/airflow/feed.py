"""The Airflow tests' feed: two tiers the oracle knows, daily partitions, a row due later.

The row due later arrives in a later ingest, its due moment set from how long an
ingest just took here (`due_after`): a loaded machine (two pytest workers, Spark
and Airflow side by side) stretches every step, and the release must still meet
that moment from the triggerer, not find it already inside the lead.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.airflow.home import spec_yaml
from tests.engine import feedkit
from tests.engine.feedkit import PAYLOAD, read_tier
from tests.engine.model import POLICIES, FeedModel, expected_tier
from waterline import Feed, FeedStatus
from waterline.clock import format_instant, parse_instant
from waterline.engine.delta.table_log import TableLog
from waterline.spec import FeedSpec, load_spec

TIERS = {t: POLICIES[t] for t in ("emb", "d10")}
PARTITION = "2026-01-05"
LAST_PARTITION = "2026-01-06"
PAST = "2026-01-05T10:00:00"
FAR = "2099-01-01T00:00:00"
SECOND = 1_000_000
#: The release task's line before it releases a due moment it was resumed for: pre-armed
#: (Spark up in time, it waits), or late (under load Spark came up after the moment; it
#: releases at once). Either is correct; neither may release early (checked from the tables).
ARMED_OR_LATE = r"pre-armed; waiting for the due moment|the due moment \S+ passed [\d.]+ s before Spark was up"
#: Partition 2026-01-05: a row due at once and one due in 2099.
FIRST_ROWS = [
    {"id": 0, "event_time": PAST, "status": "final", "embargo_until": PAST, "v": "now"},
    {"id": 2, "event_time": PAST, "status": "final", "embargo_until": FAR, "v": "never"},
]


def write_feed(root: Path, *, lead_seconds: int) -> Path:
    """Spec YAML root/feeds/f.yaml (daily 2026-01-05..06) and partition 2026-01-05 (`FIRST_ROWS`).
    Returns the feeds folder."""
    data = feedkit.spec_dict(root, TIERS, partitions={"daily": {"start": PARTITION, "end": LAST_PARTITION}},
                             release_interval_seconds=1, release_lead_seconds=lead_seconds)
    spec_yaml(root / "feeds" / "f.yaml", data)
    feedkit.write_partition(root, PARTITION, FIRST_ROWS)
    return root / "feeds"


def due_row(due_us: int, *, id: int = 1) -> dict:
    """A source row due at ``due_us`` in both tiers: its embargo ends then, and its event time is
    the d10 tier's 10 minutes before (nothing of it is due earlier, so a release defers)."""
    return {"id": id, "event_time": format_instant(due_us - 600 * SECOND).removesuffix("Z"), "status": "final",
            "embargo_until": format_instant(due_us).removesuffix("Z"), "v": "soon"}


def due_after(step_seconds: float, *, steps: float, lead_seconds: int) -> int:
    """A due moment far enough ahead for ``steps`` more steps like one that took
    ``step_seconds``, plus the lead and a margin: when they are done, the moment is
    still beyond the lead, so the release task defers to the trigger."""
    return int((time.time() + steps * step_seconds + lead_seconds + 45) * SECOND)


def write_failing_feed(root: Path) -> Path:
    """Feed ``g`` beside ``f``: its transform CASTs text that is not a time (Spark's ANSI mode
    fails the job). Returns the spec's path."""
    data = feedkit.spec_dict(root, TIERS, feed="g", partitions={"daily": {"start": PARTITION}},
                             transform="SELECT id, event_time, status, CAST(embargo_until AS TIMESTAMP) "
                                       "AS embargo_until, v FROM source")
    data["source"] = {**data["source"], "path": str(root / "bad" / "{partition}")}
    folder = root / "bad" / PARTITION
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "part-0.json").write_text(
        '{"id": 9, "event_time": "%s", "status": "final", "embargo_until": "not a time", "v": "x"}\n' % PAST)
    return spec_yaml(root / "feeds" / "g.yaml", data)


def load(root: Path) -> FeedSpec:
    return load_spec(root / "feeds" / "f.yaml")


def status(spec: FeedSpec) -> FeedStatus:
    """The feed's status from its Delta logs (`waterline.Feed.status`: no Spark)."""
    return Feed(spec).status()


def oracle(ingests: list[tuple[str, list[dict]]]) -> FeedModel:
    """DESIGN.md's versions of the feed after ``ingests`` ((partition, source rows), in order)."""
    model = FeedModel(TIERS)
    for key, rows in ingests:
        model.ingest(key, [
            {**r, "event_time": _us(r["event_time"]), "embargo_until": _us(r["embargo_until"])} for r in rows
        ])
    return model


def ingest_order(spec) -> list[str]:
    """The held table's partitions by the seq of their first ingest (JVM-free read)."""
    held = TableLog.open(spec.held_path).to_arrow(["_wl_partition", "_wl_seq"]).to_pylist()
    first: dict[str, int] = {}
    for row in held:
        first[row["_wl_partition"]] = min(row["_wl_seq"], first.get(row["_wl_partition"], row["_wl_seq"]))
    return sorted(first, key=first.get)


def assert_tiers_match_oracle(spec, model: FeedModel) -> dict[str, int]:
    """Every tier table equals `waterline.semantics` at the tier's recorded W_T; returns the W_Ts."""
    state = status(spec)
    ws = {}
    for tier in TIERS:
        w = state.tiers[tier].w_us
        assert w is not None, f"tier {tier} was never released"
        got = {k: (tuple(r[c] for c in PAYLOAD), r["_wl_seq"]) for k, r in read_tier(None, spec, tier).items()}
        want = expected_tier(model, tier, w)
        assert got == want, f"tier {tier} at W_T {format_instant(w)}: got {got}, the oracle says {want}"
        ws[tier] = w
    return ws


def _us(text: str) -> int:
    return parse_instant(text if text.endswith("Z") else text + "Z")
