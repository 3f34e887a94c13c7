"""waterline: delayed, embargoed and tiered releases of processed data.

Spark computes, Delta Lake stores, Dagster or Airflow orchestrates. The one
face of the package is `Feed`:

    import waterline
    feed = waterline.load("feeds/ticks.yaml")   # Spark starts only when needed
    feed.ingest("2026-01-05")
    feed.release()
    feed.read("delayed_15m")                    # a pyarrow Table
    feed.status()

See DESIGN.md and docs/ for the release semantics; `waterline.semantics` is the oracle.
"""

from waterline.engine.core.due import DueMoments
from waterline.engine.core.results import (
    Breach, FeedPlan, GcResult, IngestResult, MaintainResult, ReleaseProof, ReleaseResult, TableMaintenance,
    TierProof, TierRelease,
)
from waterline.engine.core.state import HeldState, TierState
from waterline.engine.core.status import FeedStatus, TierStatus
from waterline.errors import (
    CommitRaceLost,
    LeaseBusy,
    LeaseLost,
    OutcomeUnknown,
    SpecError,
    SpecNotApplied,
    TransientError,
    WaterlineError,
)
from waterline.feed import Feed, load
from waterline.policy import PolicyError
from waterline.spec import FeedSpec

__version__ = "0.9.0"

__all__ = [
    "Breach",
    "CommitRaceLost",
    "DueMoments",
    "Feed",
    "FeedPlan",
    "FeedSpec",
    "FeedStatus",
    "GcResult",
    "HeldState",
    "IngestResult",
    "LeaseBusy",
    "LeaseLost",
    "MaintainResult",
    "OutcomeUnknown",
    "PolicyError",
    "ReleaseProof",
    "ReleaseResult",
    "SpecError",
    "SpecNotApplied",
    "TableMaintenance",
    "TierProof",
    "TierRelease",
    "TierState",
    "TierStatus",
    "TransientError",
    "WaterlineError",
    "__version__",
    "load",
]
