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
Every type a `Feed` method takes or returns is exported here (``__all__``); importing
this package starts no JVM and imports no pyspark.
"""

from waterline.engine.core.due import DueMoments
from waterline.engine.core.results import (
    Breach, FeedPlan, GcResult, IngestResult, MaintainResult, ReleaseProof, ReleaseResult, StreamBatchResult,
    TableMaintenance, TableSummary, TierAudit, TierProof, TierRelease, WaterlineHistory,
)
from waterline.engine.core.runs import ReleaseRun, StreamRun
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
from waterline.engine.tables.applied_spec import AppliedSpec
from waterline.feed import Duration, Feed, Instant, SessionConfig, SparkSettings, load
from waterline.policy import PolicyError
from waterline.spec import FeedSpec
from waterline.spec.release_part import SpecDiff

__version__ = "0.9.0"

__all__ = [
    "AppliedSpec",
    "Breach",
    "CommitRaceLost",
    "DueMoments",
    "Duration",
    "Feed",
    "FeedPlan",
    "FeedSpec",
    "FeedStatus",
    "GcResult",
    "HeldState",
    "IngestResult",
    "Instant",
    "LeaseBusy",
    "LeaseLost",
    "MaintainResult",
    "OutcomeUnknown",
    "PolicyError",
    "ReleaseProof",
    "ReleaseResult",
    "ReleaseRun",
    "SessionConfig",
    "SparkSettings",
    "SpecDiff",
    "SpecError",
    "SpecNotApplied",
    "StreamBatchResult",
    "StreamRun",
    "TableMaintenance",
    "TableSummary",
    "TierAudit",
    "TierProof",
    "TierRelease",
    "TierState",
    "TierStatus",
    "TransientError",
    "WaterlineError",
    "WaterlineHistory",
    "__version__",
    "load",
]
