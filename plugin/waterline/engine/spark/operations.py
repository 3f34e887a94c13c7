"""The Spark room's operations, as `waterline.Feed` calls them (importing this loads pyspark)."""

from waterline.engine.spark.audit import audit_tier
from waterline.engine.spark.control import hold, resume
from waterline.engine.spark.gc import gc
from waterline.engine.spark.ingest import ingest
from waterline.engine.spark.jvm_log import quiet_session
from waterline.engine.spark.maintain import maintain
from waterline.engine.spark.proof import prove_tier
from waterline.engine.spark.prearmed import ReleaseRun, release_run, release_when_due
from waterline.engine.spark.release import release
from waterline.engine.spark.schedule import compile_tiers
from waterline.engine.spark.source import read_output
from waterline.engine.spark.stream import StreamRun
from waterline.engine.spark.stream import run as stream

__all__ = [
    "ReleaseRun", "audit_tier", "compile_tiers", "gc", "hold", "ingest", "maintain", "prove_tier", "quiet_session",
    "read_output", "release",
    "release_run", "release_when_due", "resume", "stream", "StreamRun",
]
