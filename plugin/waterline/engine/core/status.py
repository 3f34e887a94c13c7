"""A feed's status as `waterline status`, the release sensor and the Airflow trigger see it.

Plain values (computed by `waterline.engine.tables.status.read_feed_status` from
the tables' commit states alone): per tier, W_T, its lag behind the trusted
clock, the versions pending and the next due moment.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class TierStatus:
    """One tier: where its waterline is and what is still to come."""

    tier: str
    w_us: int | None  # W_T; None before the first release
    seq: int  # the held sequence the tier has applied
    hold: bool
    lag_us: int | None  # trusted clock minus W_T
    pending: int  # versions not yet taken over at W_T, plus versions ingested since
    next_due_us: int | None  # earliest instant something changes for the tier (NEG_INF: now)
    due: bool  # a release now would change the tier


@dataclass(frozen=True)
class FeedStatus:
    """The feed: its ingest sequence, the W a release now would use, and each tier's `TierStatus`."""

    feed: str
    now_us: int
    seq: int
    release_w_us: int  # the W a release now would use
    event_w_us: int | None
    tiers: dict[str, TierStatus] = field(default_factory=dict)
    # Whether the warehouse holds any table of the feed (held or a tier). False for a feed that
    # has not ingested yet, or a spec pointing at the wrong warehouse: the sensor and trigger
    # see nothing due and wait; `waterline status` refuses, saying so.
    exists: bool = True

    @property
    def due(self) -> bool:
        """A release now would change at least one tier."""
        return any(t.due for t in self.tiers.values())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"due": self.due}


def first_run_hint(spec: Any) -> str:
    """What creates a feed's tables (``spec``: a `FeedSpec`): a stream feed's first batch,
    a batch feed's first ingest. The end of an error about a table not there yet."""
    if spec.is_stream:
        where = spec.spec_file or "SPEC"
        return f"run `waterline stream {where} --once` first (its first batch creates the tables)"
    return "ingest a partition first"
