"""Each key's current held version, kept in memory between a stream's micro-batches.

A stream batch diffs its records against each key's current version (its hash, whether it
is a removal, its partition: `stream_ingest._versions`). Read from held, that lookup scans
every held version the table keeps, and held keeps every version until gc (at least the
longest pending delay of versions): the cost of each batch would grow with the feed's
age. Kept here, it is one cached row per key, built once from held and advanced by each
batch's own committed files, so a batch's lookup costs the same at any age.

The index is valid for exactly one held version, the one it was built on or advanced to.
Any commit it did not see (a batch ingest, gc, a user's OPTIMIZE, another stream process)
leaves the held table at another version, and the next batch reads held again: the index
never answers for a table it has not seen. Over Spark Connect (a batch runs in the
server's Python worker) nothing is kept: each batch reads held, as before.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from pyspark import SparkContext, StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from waterline.engine.core import columns as C
from waterline.spec import FeedSpec

log = logging.getLogger(__name__)

#: The column of `current_of`: a struct of the current version's hash (``h``), removal flag
#: (``r``) and partition (``p``).
CURRENT = "_wl_current"
#: Advances before the index is read from held again: each advance adds a step to its
#: plan, and Spark analyses the whole plan of every query that reads it.
MAX_ADVANCES = 64
#: Indexes kept at once (one per held table a process streams into); the oldest goes first.
MAX_KEPT = 8


def current_of(versions: DataFrame, keys: list[str]) -> DataFrame:
    """Per key of the held rows ``versions``: its current version. A move is two versions of
    one seq (the removal in the old partition, the row in the new one): of a key's newest
    seq, the row that is not a removal is the current version."""
    newest = F.struct(F.col(C.SEQ), ~F.col(C.REMOVED))
    current = F.struct(F.col(C.HASH).alias("h"), F.col(C.REMOVED).alias("r"), F.col(C.PARTITION).alias("p"))
    return versions.groupBy(*keys).agg(F.max_by(current, newest).alias(CURRENT))


@dataclass
class _Index:
    frame: DataFrame  # keys, CURRENT: every key held has, persisted
    version: int  # the held version it answers for
    advances: int
    # Each micro-batch comes with a session of its own (a stream query's clone of the
    # session that started it, wrapped anew per batch); clones share the context and its
    # cache, so the index is valid in every session of the context it was cached in.
    context: SparkContext


_KEPT: dict[str, _Index] = {}  # held path -> its index
_LOCK = threading.Lock()


def lookup(spark: SparkSession, spec: FeedSpec, held_version: int, batch_keys: DataFrame, *,
           remote: bool = False) -> DataFrame:
    """The current version (`CURRENT`) of each key of ``batch_keys`` that held has at
    ``held_version`` (the version the batch read under the lease)."""
    keys = list(spec.key)
    if remote:
        return current_of(_held(spark, spec.held_path, held_version).join(batch_keys, keys, "left_semi"), keys)
    with _LOCK:
        index = _KEPT.get(spec.held_path)
        if index is None or index.version != held_version or index.context is not spark.sparkContext:
            _drop(spec.held_path)
            while len(_KEPT) >= MAX_KEPT:
                _drop(next(iter(_KEPT)))
            built = _kept(current_of(_held(spark, spec.held_path, held_version), keys))
            index = _KEPT[spec.held_path] = _Index(built, held_version, 0, spark.sparkContext)
            log.info("feed %s: current versions indexed from held version %s", spec.feed, held_version)
        return index.frame.join(batch_keys, keys, "left_semi")


def advance(spark: SparkSession, spec: FeedSpec, *, read_version: int, committed_version: int,
            seq: int | None) -> None:
    """After the batch that read held at ``read_version`` committed ``committed_version``
    with versions of sequence ``seq`` (None: the commit added no row): the index answers for
    that version, advanced by those versions, read from held at that version (its
    statistics on the sequence skip every other file). A commit of another writer in between
    (``committed_version`` is not the next version), or an index built on another version,
    drops the index instead."""
    with _LOCK:
        index = _KEPT.get(spec.held_path)
        if (index is None or index.version != read_version or index.context is not spark.sparkContext
                or committed_version != read_version + 1 or index.advances >= MAX_ADVANCES):
            _drop(spec.held_path)
            return
        if seq is None:
            index.version = committed_version
            return
        keys = list(spec.key)
        new = current_of(_held(spark, spec.held_path, committed_version).filter(F.col(C.SEQ) == seq), keys)
        frame = _kept(index.frame.join(new.select(*keys), keys, "left_anti").unionByName(new))
        index.frame.unpersist()
        _KEPT[spec.held_path] = _Index(frame, committed_version, index.advances + 1, spark.sparkContext)


def forget(spec: FeedSpec) -> None:
    """Free the index of ``spec``'s held table (a stream run ended)."""
    with _LOCK:
        _drop(spec.held_path)


def _drop(path: str) -> None:
    index = _KEPT.pop(path, None)
    if index is not None:
        try:
            index.frame.unpersist()
        except Exception as exc:  # noqa: BLE001  (a stopped context has freed it already)
            log.debug("index of %s not unpersisted: %s", path, exc)


def _kept(frame: DataFrame) -> DataFrame:
    """``frame`` persisted and computed (so the frame it was derived from can be freed)."""
    kept = frame.persist(StorageLevel.MEMORY_AND_DISK_DESER)
    kept.count()
    return kept


def _held(spark: SparkSession, path: str, version: int) -> DataFrame:
    return spark.read.format("delta").option("versionAsOf", version).load(path)
