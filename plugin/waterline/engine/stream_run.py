"""`waterline stream`: Spark Structured Streaming from each Kafka source into the held table.

One streaming query per source, its checkpoint in the warehouse
(``<warehouse>/<feed>/_wl_stream/<source>/``, so a run on another machine resumes where
this one stopped), each micro-batch appended by `stream.batch.ingest_batch` as one held
commit carrying (``waterline.stream.<source>``, batch id). Tiers with rows due now (a
real-time tier) are released in the same run, so produce -> readable needs no second
process: after each batch that made rows due in a long-running stream, once after the
last batch in a drain.

``once``: ``Trigger.AvailableNow``, drain what the topics hold now and return (a Dagster
materialization, an Airflow task, a test); the release at the end also publishes what a
killed run committed but never released. Otherwise a processing-time trigger until
``stop`` is set (the CLI sets it on SIGTERM/SIGINT); the queries then stop after their
current batch.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession

from waterline.clock import Clock, SystemClock
from waterline.engine.core import faults
from waterline.engine.core.runs import StreamRun  # a core value now; still importable from here
from waterline.engine.core.results import ReleaseResult, StreamBatchResult, combine_releases
from waterline.engine.delta import storage
from waterline.engine.delta.objects import read_object
from waterline.engine.delta.table_log import TableLog, commit_path
from waterline.engine.tables.status import read_feed_status
from waterline.engine.tables.stopping import stop_grace
from waterline.engine.ingest.stream.offsets import batch_bound
from waterline.engine.spark.local_frames import limited_to, local_rows
from waterline.engine.release.release import release
from waterline.engine.spark.errors import first_line, spark_message
from waterline.engine.ingest.stream.batch import batches_in_log, ingest_batch
from waterline.engine.ingest.stream.batch import warm_up as warm_up_batch
from waterline.engine.ingest.stream.source import read_once, read_stream
from waterline.errors import WaterlineError
from waterline.spec import FeedSpec

log = logging.getLogger(__name__)

#: How many records a long-running stream runs through a batch's job before it starts
#: (`stream.batch.warm_up`), and how many of the topic's records they are copies of.
WARM_UP_RECORDS = 20_000
WARM_UP_SAMPLE = 1_000


def checkpoint_path(spec: FeedSpec, source: str) -> str:
    """Where Spark keeps source ``source``'s offsets and commits (in the warehouse)."""
    return storage.join(spec.feed_dir, "_wl_stream", source)


@dataclass(frozen=True)
class BatchSink:
    """What each micro-batch of one source runs: the held append, then the tiers' release
    when the batch made rows due at once (``release_due``). A plain object of picklable fields:
    over Spark Connect, Spark runs it in the server's Python worker, with the batch's own
    session, and with the driver-read limit of the process that made it (``driver_rows``,
    `local_frames.local_rows`), not of the server's environment."""

    spec: FeedSpec
    source: str
    clock: Clock
    release_due: bool = True
    driver_rows: int = field(default_factory=local_rows)

    def __call__(self, records: DataFrame, batch_id: int) -> tuple[StreamBatchResult, ReleaseResult | None]:
        faults.boundary(faults.STREAM_BATCH_START)
        spark = records.sparkSession
        with limited_to(self.driver_rows):
            done = ingest_batch(spark, self.spec, self.source, records, batch_id, clock=self.clock,
                                bound=batch_bound(checkpoint_path(self.spec, self.source), batch_id))
            log.info("%s", done.summary())
            released = _release_after(spark, self.spec, done, self.clock) if self.release_due else None
        faults.boundary(faults.STREAM_BATCH_END)
        return done, released


def run(spark: SparkSession, spec: FeedSpec, *, once: bool, trigger_seconds: float = 1.0,
        clock: Clock | None = None, stop: threading.Event | None = None,
        on_batch: Callable[[StreamBatchResult], None] | None = None,
        warm_up_records: int | None = None) -> StreamRun:
    """Stream every Kafka source of ``spec`` into held (see the module).

    Over Spark Connect the batches run in the server's Python worker (which must import
    waterline: `waterline spark start` starts one that can); this process then releases
    the tiers itself when a batch made some due, learns each batch from the commit it made
    (`batches_in_log`), and calls ``on_batch`` as it learns them. A long-running run first
    warms each source's batch job (`warm_up`; ``warm_up_records`` None: `WARM_UP_RECORDS`,
    0: no warm-up)."""
    if not spec.is_stream:
        raise WaterlineError(f"feed {spec.feed}: no Kafka source: `waterline ingest` reads its partitions")
    clock = clock or SystemClock()
    result = StreamRun(feed=spec.feed)
    failures: list[BaseException] = []
    lock = threading.Lock()  # foreachBatch calls of several queries come on their own threads
    remote = is_remote_session(spark)
    start_version = TableLog.open(spec.held_path).version

    def each(sink: BatchSink) -> Callable[[DataFrame, int], None]:
        def apply(records: DataFrame, batch_id: int) -> None:
            try:
                with lock:
                    done, released = sink(records, batch_id)
                    result.batches.append(done)
                    if released is not None:
                        result.releases.append(released)
                if on_batch is not None:
                    on_batch(done)
            except BaseException as exc:  # kept: Spark wraps it in a many-line StreamingQueryException
                failures.append(exc)
                raise
        return apply

    warm_up_records = WARM_UP_RECORDS if warm_up_records is None else warm_up_records
    if not once and warm_up_records > 0:
        for source in spec.sources:
            warm_up(spark, spec, source, warm_up_records)
    queries = {}
    for source in spec.sources:
        # a drain releases once, after its last batch (below): a release per batch would cost
        # seconds each while later batches wait, for tiers the next batch changes again
        sink = BatchSink(spec, source, clock, release_due=not (remote or once))
        writer = (read_stream(spark, spec, source).writeStream.foreachBatch(sink if remote else each(sink))
                  .option("checkpointLocation", checkpoint_path(spec, source))
                  .queryName(f"waterline_{spec.feed}_{source}"))
        writer = writer.trigger(availableNow=True) if once else writer.trigger(processingTime=f"{trigger_seconds} seconds")
        queries[source] = writer.start()
    follow = _RemoteFollower(spark, spec, clock, result, start_version, on_batch) if remote else None
    try:
        if once:
            for source, query in queries.items():
                _await(query, failures, spec, source)
        else:
            stop = stop or threading.Event()
            while not stop.is_set():
                for source, query in queries.items():
                    if not query.isActive:
                        _await(query, failures, spec, source)  # raises what ended it
                if follow is not None:
                    follow.catch_up()
                stop.wait(0.5 if follow is None else 0.2)
            _stop_after_batch(queries.values())
    finally:
        for query in queries.values():
            if query.isActive:
                query.stop()
    if follow is not None:
        follow.catch_up()
    elif once and _any_tier_due(spec, clock):
        result.releases.append(release(spark, spec, clock=clock))
    for source, query in queries.items():
        progress = query.lastProgress
        if progress and progress.get("sources"):
            result.offsets[source] = _offsets(progress["sources"][0].get("endOffset"))
    return result


class _RemoteFollower:
    """A Connect run's view of batches that ran in the server: each learnt from its held
    commit, and the tiers released from this process when one of them made rows due."""

    def __init__(self, spark: SparkSession, spec: FeedSpec, clock: Clock, result: StreamRun,
                 start_version: int | None, on_batch: Callable[[StreamBatchResult], None] | None) -> None:
        self.spark, self.spec, self.clock, self.result, self.on_batch = spark, spec, clock, result, on_batch
        self.seen_version = start_version

    def catch_up(self) -> None:
        # Asked 5 times a second: one small object read (the next commit file, absent until
        # the next batch commits) rather than loading held's whole log, whose files grow
        # with every batch until gc.
        if self.seen_version is not None:
            if read_object(commit_path(self.spec.held_path, self.seen_version + 1)) is None:
                return
        held = TableLog.open(self.spec.held_path)
        if held.version is None or held.version == self.seen_version:
            return
        new = [b for source in self.spec.sources for b in batches_in_log(held, source, after_version=self.seen_version)]
        self.seen_version = held.version
        for batch in new:
            self.result.batches.append(batch)
            if self.on_batch is not None:
                self.on_batch(batch)
        if _any_tier_due(self.spec, self.clock):
            self.result.releases.append(release(self.spark, self.spec, clock=self.clock))


def warm_up(spark: SparkSession, spec: FeedSpec, source: str, records: int) -> int:
    """Run ``records`` copies of the first `WARM_UP_SAMPLE` records source ``source``'s topics
    hold through a batch's job before the stream starts (`stream.batch.warm_up`: nothing
    written), and return how many ran (0: the topics are empty, or it failed). An
    optimisation only: a failure is logged and the stream starts anyway (the real batch
    then reports what is wrong, as it would have)."""
    started = time.monotonic()
    try:
        sample = read_once(spark, spec, source, starting="earliest").limit(WARM_UP_SAMPLE)
        ran = warm_up_batch(spark, spec, source, sample, records)
    except Exception as exc:
        log.warning("feed %s: source %s: warm-up skipped: %s", spec.feed, source, first_line(exc))
        return 0
    log.info("feed %s: source %s: warm-up ran %d records through a batch's job in %.1f s",
             spec.feed, source, ran, time.monotonic() - started)
    return ran


def is_remote_session(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect client session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _release_after(spark: SparkSession, spec: FeedSpec, batch: StreamBatchResult,
                   clock: Clock) -> ReleaseResult | None:
    """The release after ``batch``, when it appended rows due now or was a replay (of a batch
    whose run died before its release) while some tier is due (read from the log, no JVM).

    The tiers the batch made due at once (a real-time tier) are released first, in a release
    of their own: their commit then waits for their own staging only, not for every tier's.
    The other tiers follow in a second release, as one release of all of them would have
    advanced them."""
    if batch.skipped:
        return release(spark, spec, clock=clock) if _any_tier_due(spec, clock) else None
    now = clock.now_us()
    first = [t for t, due in batch.due_by_tier.items() if due <= now]
    if not first:
        return None
    released = [release(spark, spec, clock=clock, tiers=first)]
    rest = [t for t in spec.tiers if t not in first]
    if rest:
        released.append(release(spark, spec, clock=clock, tiers=rest))
    return combine_releases(released)


def _any_tier_due(spec: FeedSpec, clock: Clock) -> bool:
    """Whether some tier has rows due now (read from the logs, no Spark job)."""
    return any(tier.due for tier in read_feed_status(spec, clock=clock).tiers.values())


def _await(query, failures: list[BaseException], spec: FeedSpec, source: str) -> None:
    try:
        query.awaitTermination()
    except Exception as exc:
        if failures:  # our own error, not Spark's wrapping of it
            raise failures[0] from None
        message = spark_message(exc) or str(exc).strip().splitlines()[0]
        if "waiting for a node assignment" in message or "Timed out waiting to send the call" in message:
            kafka = spec.sources[source].kafka
            message = (f"cannot reach the Kafka brokers at {kafka.bootstrap if kafka else '?'} "
                       f"(Spark's Kafka client timed out listing them)")
        else:
            message = missing_offsets(message) or message
        raise WaterlineError(f"feed {spec.feed}: source {source}: {message}") from exc


def _stop_after_batch(queries) -> None:
    """Stop each query once its current batch finished (at most the stop grace, `stop_grace`)."""
    deadline = time.monotonic() + stop_grace()
    for query in queries:
        while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
            time.sleep(0.1)
        query.stop()


def missing_offsets(message: str) -> str | None:
    """Spark's data-loss error (records Kafka no longer has) as one line naming the topic,
    partition and range, or None for any other error."""
    found = re.search(r"[Pp]artition (\S+?)-(\d+)'s offset was changed from (\d+) to (\d+)", message)
    if found:
        topic, partition, was, now = found.groups()
        return (f"topic {topic} partition {partition}: offsets {was}..{int(now) - 1} are no longer in Kafka "
                f"(retention or a deleted topic); start again from a new checkpoint or set "
                f"options.failOnDataLoss: false to skip them")
    found = re.search(r"[Cc]annot fetch offset (\d+).*?TopicPartition: (\S+?)-(\d+)", message)
    if found:
        offset, topic, partition = found.groups()
        return (f"topic {topic} partition {partition}: offset {offset} is no longer in Kafka (retention or a "
                f"deleted topic); start again from a new checkpoint or set options.failOnDataLoss: false to skip it")
    return None


def _offsets(end) -> dict:
    if isinstance(end, str):
        try:
            end = json.loads(end)
        except ValueError:
            return {}
    return end if isinstance(end, dict) else {}
