"""The engine's operations, as `waterline.Feed` calls them (importing this loads pyspark)."""

from waterline.engine.proof.audit import audit_tier
from waterline.engine.tables.control import hold, resume
from waterline.engine.upkeep.gc import gc
from waterline.engine.ingest.ingest import ingest
from waterline.engine.spark.jvm_log import quiet_session
from waterline.engine.spark.session import session_running
from waterline.engine.upkeep.maintain import maintain
from waterline.engine.proof.release_proof import prove_tier
from waterline.engine.release.prearmed import ReleaseRun, release_run, release_when_due
from waterline.engine.release.release import release
from waterline.engine.release.plan_counts import count_changes
from waterline.engine.release.respec import apply
from waterline.engine.tables.schedule import compile_tiers
from waterline.engine.ingest.source import read_output
from waterline.engine.stream_run import StreamRun
from waterline.engine.stream_run import run as stream

__all__ = [
    "ReleaseRun", "apply", "audit_tier", "compile_tiers", "count_changes", "gc", "hold", "ingest", "maintain", "prove_tier", "quiet_session",
    "read_output", "release",
    "release_run", "release_when_due", "resume", "session_running", "stream", "StreamRun",
]
