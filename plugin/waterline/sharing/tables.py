"""The tier tables a sharing server reads, opened once per commit.

Opening a tier with ``deltalake`` (its log read from the last checkpoint) was most of
a query's cost (~20 of ~25 ms on a local warehouse). A tier changes only by a new
commit, and Delta's versions are contiguous: while ``_delta_log/<v+1>.json`` does not
exist, version v is the latest. So a request costs one existence probe (a ``stat``
locally, a ``HEAD`` on S3) and a tier is opened again only after a commit, by the
first request that sees it. Snapshots of older versions (time travel, the start of a
change query) never change; the most recent few are kept.

A cached snapshot (`TierSnapshot`, over the Delta room's `TableLog`: typed protocol,
metadata and ``add`` actions) is shared by the threads answering requests and is never
changed in place (``load_as_version`` would move it under another request): a new
version is a new snapshot. A change query reads commit files as typed actions too
(`waterline.engine.delta.actions.parse_commit`), so the server reads the Delta log
the way the engine does. The one assumption: a tier table is not deleted and re-created
under a running server (waterline never does; a user who does restarts the server).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable

from waterline.engine.delta import storage
from waterline.engine.delta.actions import Action, AddFile, Metadata, Protocol, parse_commit
from waterline.engine.delta.table_log import TableLog
from waterline.sharing import protocol as P
from waterline.sharing.locations import TierLocation, tier_location
from waterline.sharing.signing import FileSigner
from waterline.spec import FeedSpec

#: Time-travel snapshots (and commit-time maps) kept, over all tiers.
KEPT_VERSIONS = 32
_CHANGE_FEED = "delta.enableChangeDataFeed"


class TierSnapshot:
    """One version of a tier table as the server answers from it: a `TableLog` (the Delta
    room's generic reader) whose protocol and metadata are read once. Read-only, shared by
    the threads answering requests."""

    def __init__(self, log: TableLog) -> None:
        self._log = log

    def version(self) -> int:
        return int(self._log.version)  # type: ignore[arg-type]  (an opened table has a version)

    @cached_property
    def _protocol(self) -> Protocol:
        return self._log.protocol()

    @cached_property
    def _metadata(self) -> Metadata:
        return self._log.metadata()

    def protocol(self) -> Protocol:
        return self._protocol

    def metadata(self) -> Metadata:
        return self._metadata

    def change_feed(self) -> bool:
        """Whether this version records its row changes (``delta.enableChangeDataFeed``)."""
        return self.metadata().configuration.get(_CHANGE_FEED, "").lower() == "true"

    def add_files(self) -> list[AddFile]:
        return self._log.add_files()

    def file_uris(self) -> list[str]:
        return self._log.file_uris()

    def commit_times(self) -> dict[int, int]:
        """Version -> commit timestamp (ms) of every retained version up to this one."""
        commits = self._log.history(self.version() + 1)
        return {int(c["version"]): int(c["timestamp"]) for c in commits if "timestamp" in c}


class Snapshots:
    """Opened tier tables: the latest of each tier, and the last `KEPT_VERSIONS` older
    versions asked for. Thread-safe; opens happen outside the lock."""

    def __init__(self, kept: int = KEPT_VERSIONS) -> None:
        self._kept = kept
        self._lock = threading.Lock()
        self._latest: dict[str, TierSnapshot] = {}
        self._versions: OrderedDict[tuple[str, int], TierSnapshot] = OrderedDict()
        self._times: OrderedDict[tuple[str, int], dict[int, int]] = OrderedDict()
        self.opened = 0  # tables opened from the store: what the cache saves is visible in tests and benches

    def latest(self, path: str, has_commit: Callable[[int], bool]) -> TierSnapshot | None:
        """The latest version of the table at ``path`` (None if there is no table yet);
        ``has_commit(v)`` says whether its log has version ``v``."""
        with self._lock:
            cached = self._latest.get(path)
        if cached is not None and not has_commit(cached.version() + 1):
            return cached
        if cached is None and not storage.is_delta_table(path):
            return None
        table = self._open(path)
        with self._lock:  # two requests may both have opened it: keep the newer
            current = self._latest.get(path)
            if current is None or current.version() < table.version():
                self._latest[path] = table
        return table

    def at(self, path: str, version: int, latest: TierSnapshot) -> TierSnapshot:
        """Version ``version`` of the table whose latest snapshot is ``latest``."""
        if version == latest.version():
            return latest
        if version > latest.version():
            raise P.invalid(f"version {version} is after the table's latest version {latest.version()}")
        key = (path, version)
        with self._lock:
            table = self._versions.get(key)
            if table is not None:
                self._versions.move_to_end(key)
                return table
        try:
            table = self._open(path, version=version)
        except Exception:
            raise P.invalid(f"version {version} is no longer available") from None
        with self._lock:
            self._versions[key] = table
            while len(self._versions) > self._kept:
                self._versions.popitem(last=False)
        return table

    def commit_times(self, path: str, table: TierSnapshot) -> dict[int, int]:
        """Version -> commit timestamp (ms) of every version up to ``table``'s, as its log has them."""
        key = (path, table.version())
        with self._lock:
            times = self._times.get(key)
            if times is not None:
                self._times.move_to_end(key)
                return times
        times = table.commit_times()
        with self._lock:
            self._times[key] = times
            while len(self._times) > self._kept:
                self._times.popitem(last=False)
        return times

    def _open(self, path: str, **kwargs: Any) -> TierSnapshot:
        # opened at the version asked for (not the latest, then moved back): one log read
        table = TierSnapshot(TableLog(path, storage.delta_table(path, **kwargs)))
        with self._lock:
            self.opened += 1
        return table


@dataclass(frozen=True)
class SharedTier:
    """One tier of one feed, as a request that may read it sees it."""

    spec: FeedSpec
    name: str
    where: TierLocation
    snapshots: Snapshots

    @property
    def path(self) -> str:
        return self.spec.tier_path(self.name)

    @property
    def qualified(self) -> str:
        return f"{self.spec.feed}.{P.SCHEMA}.{self.name}"

    def latest(self) -> TierSnapshot:
        table = self.snapshots.latest(self.path, self.where.has_commit)
        if table is None:
            raise P.not_found("table", self.name)  # declared but never written: nothing to share yet
        return table

    def at(self, version: int, latest: TierSnapshot | None = None) -> TierSnapshot:
        return self.snapshots.at(self.path, version, latest or self.latest())

    def commit_times(self, table: TierSnapshot) -> dict[int, int]:
        return self.snapshots.commit_times(self.path, table)

    def version_at_or_before(self, table: TierSnapshot, ts_ms: int) -> int:
        at = [v for v, t in self.commit_times(table).items() if t <= ts_ms]
        if not at:
            raise P.invalid("the timestamp is before the table's earliest available version")
        return max(at)

    def version_at_or_after(self, table: TierSnapshot, ts_ms: int) -> int:
        at = [v for v, t in self.commit_times(table).items() if t >= ts_ms]
        if not at:
            raise P.invalid("the timestamp is after the table's latest version")
        return min(at)

    def commit_actions(self, version: int) -> list[Action]:
        """The typed actions of commit ``version`` (read through the tier's location)."""
        try:
            text = self.where.commit_json(version)
        except Exception:
            raise P.invalid(f"the changes of version {version} are no longer available") from None
        return parse_commit(text.encode("utf-8"))


class TierTables:
    """The tiers of the served feeds: their locations (built once) and their snapshots."""

    def __init__(self, signer: FileSigner, *, url_ttl_seconds: int, s3_client: Callable[[], Any]) -> None:
        self.snapshots = Snapshots()
        self._signer = signer
        self._ttl = url_ttl_seconds
        self._s3_client = s3_client
        self._where: dict[tuple[str, str], TierLocation] = {}
        self._lock = threading.Lock()

    def tier(self, spec: FeedSpec, tier: str) -> SharedTier:
        key = (spec.feed, tier)
        with self._lock:
            where = self._where.get(key)
        if where is None:
            where = tier_location(spec.tier_path(tier), share=spec.feed, tier=tier, signer=self._signer,
                                  s3_client=self._s3_client, ttl_seconds=self._ttl)
            with self._lock:
                self._where[key] = where
        return SharedTier(spec, tier, where, self.snapshots)
