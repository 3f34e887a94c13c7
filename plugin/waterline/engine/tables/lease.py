"""A per-feed lease that serialises ingests and releases of one feed, kept in the store itself.

The lease is one small object ``<feed_dir>/_wl_lease`` (a file in a local
warehouse, an object in an S3 one) holding JSON: owner, a random token and an
expiry instant. One code path for every warehouse, over a three-call store
(`LeaseStore`):

* acquire: create the object only if absent (``If-None-Match: *`` on S3, an
  atomic ``link`` locally); if it exists and has expired, replace it only if it
  is unchanged since read (``If-Match: <etag>``), so of two takers one wins;
* hold: a heartbeat thread renews the expiry every ``ttl/3``, again by
  conditional replace; a failed renewal marks the lease lost;
* release: a conditional replace with an expiry in the past.

A holder paused past its expiry (GC, a stopped VM) may resume while a successor
holds the lease. The engine calls `Lease.check` right before each commit (lost,
or less than ``margin_s`` left: stop), and every commit carries a Delta
transaction version derived from the state it was computed from, so a stale
commit that still lands after a successor's is skipped by Delta and detected
(`waterline.engine.tables.feed_tables.committed_version`). docs/decisions.md "Mutual
exclusion" states what this assumes of the store and of clocks.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Protocol

from waterline.engine.delta import storage
from waterline.engine.delta.objects import conditional_put, create_if_absent, synced_temp
from waterline.engine.delta.storage import s3_client, split_s3
from waterline.errors import LeaseBusy, LeaseLost, WaterlineError

LEASE_NAME = "_wl_lease"
TTL_ENV = "WATERLINE_LEASE_TTL_S"
WAIT_ENV = "WATERLINE_LEASE_WAIT_S"
DEFAULT_WAIT_S = 600.0
DEFAULT_TTL_S = 60.0
# How far writers' wall clocks may disagree; a taker waits this long past the expiry.
SKEW_S = 5.0


class LeaseStore(Protocol):
    """Conditional create/replace of one small object; an etag identifies a content."""

    where: str

    def create(self, body: bytes) -> str | None:
        """Write ``body`` if the object does not exist: its etag, or None if it exists."""

    def read(self) -> tuple[bytes, str] | None:
        """The body and etag, or None if there is no object."""

    def replace(self, body: bytes, etag: str) -> str | None:
        """Write ``body`` if the object's etag is still ``etag``: the new etag, or None."""


class LocalStore:
    """A file on a local (or POSIX-locking shared) filesystem.

    Create is a hard link of a fully written temporary file (atomic, fails if the
    name exists); replace compares and renames under a `flock` of a side file,
    which is enough on one machine; the etag is the content's hash (every body
    carries a fresh token, so contents never repeat).
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LEASE_NAME
        self.where = str(self.path)

    def create(self, body: bytes) -> str | None:
        return _etag(body) if create_if_absent(str(self.path), body) else None

    def read(self) -> tuple[bytes, str] | None:
        try:
            body = self.path.read_bytes()
        except FileNotFoundError:
            return None
        return body, _etag(body)

    def replace(self, body: bytes, etag: str) -> str | None:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / f".{LEASE_NAME}.cas", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            current = self.read()
            if current is None or current[1] != etag:
                return None
            os.replace(synced_temp(self.path, body), self.path)
            return _etag(body)
        finally:
            os.close(fd)  # releases the flock


class S3Store:
    """An object in an S3-compatible store, with conditional PUTs (boto3).

    Needs a store that honours ``If-None-Match: *`` and ``If-Match`` on PutObject
    (AWS S3 since 2024; s3proxy 4.1; MinIO) and is strongly consistent for reads
    after writes (AWS S3 since 2020).
    """

    def __init__(self, uri: str, client=None) -> None:
        self.bucket, prefix = split_s3(uri)
        self.key = "/".join(p for p in (prefix.strip("/"), LEASE_NAME) if p)
        self.where = f"s3://{self.bucket}/{self.key}"
        self.client = client or s3_client()

    def _put(self, body: bytes, **condition: str) -> str | None:
        return conditional_put(self.client, self.bucket, self.key, body, **condition)  # None: another write won

    def create(self, body: bytes) -> str | None:
        return self._put(body, IfNoneMatch="*")

    def read(self) -> tuple[bytes, str] | None:
        from botocore.exceptions import ClientError  # loaded with the client: S3 warehouses only

        try:
            out = self.client.get_object(Bucket=self.bucket, Key=self.key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise
        return out["Body"].read(), out["ETag"]

    def replace(self, body: bytes, etag: str) -> str | None:
        return self._put(body, IfMatch=etag)


def _etag(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def store_for(feed_dir: str) -> LeaseStore:
    """The lease store of a feed folder: S3 for ``s3a://``/``s3://`` URIs, else a local file."""
    if storage.is_s3(feed_dir):
        return S3Store(feed_dir)
    folder = storage.local_folder(feed_dir)
    if folder is None:
        raise WaterlineError(f"warehouse {feed_dir}: no lease store for this kind of location")
    return LocalStore(folder)


class Lease:
    """A held lease: renewed in the background until `release`; `check` before committing."""

    def __init__(self, store: LeaseStore, *, feed: str, ttl_s: float, margin_s: float | None = None,
                 skew_s: float = SKEW_S) -> None:
        self.store, self.feed, self.ttl_s, self.skew_s = store, feed, ttl_s, skew_s
        self.margin_s = ttl_s / 4 if margin_s is None else margin_s
        self.owner = f"{socket.gethostname()} pid {os.getpid()}"
        self.token = uuid.uuid4().hex
        self.etag: str | None = None
        self.expires_at = 0.0
        self.lost = False
        self._stop = threading.Event()
        self._mutex = threading.Lock()
        self._thread: threading.Thread | None = None

    def _body(self, expires_at: float) -> bytes:
        return json.dumps({"owner": self.owner, "host": socket.gethostname(), "pid": os.getpid(),
                           "token": self.token, "expires_at": expires_at, "written_at": time.time()}).encode()

    def try_acquire(self) -> str | None:
        """Take the lease if free or expired; None on success, else who holds it."""
        expires = time.time() + self.ttl_s
        etag = self.store.create(self._body(expires))
        if etag is None:
            current = self.store.read()
            if current is None:
                return "(released while looking)"
            body, seen = current
            holder = _parse(body)
            if holder is not None and time.time() < holder.get("expires_at", 0) + self.skew_s and _alive(holder):
                return str(holder.get("owner", "another process"))
            expires = time.time() + self.ttl_s
            etag = self.store.replace(self._body(expires), seen)  # expired (or unreadable): take it over
            if etag is None:
                return "(taken over by another process)"
        self.etag, self.expires_at = etag, expires
        with _HELD_MUTEX:
            _HELD.add(self)
        self._thread = threading.Thread(target=self._heartbeat, name=f"wl-lease-{self.feed}", daemon=True)
        self._thread.start()
        return None

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            self.renew()

    def renew(self) -> None:
        with self._mutex:
            if self.lost or self.etag is None:
                return
            expires = time.time() + self.ttl_s
            try:
                etag = self.store.replace(self._body(expires), self.etag)
            except Exception:  # a store hiccup: keep the old expiry, `check` judges
                return
            if etag is None:
                self.lost = True
            else:
                self.etag, self.expires_at = etag, expires

    def check(self) -> None:
        """Raise unless the lease is still ours for at least ``margin_s``: call right before a commit."""
        if self.lost or time.time() > self.expires_at - self.margin_s:
            raise LeaseLost(
                f"feed {self.feed}: lost the lease {self.store.where} (paused past its expiry?); "
                "nothing more is committed by this run, re-run it"
            )

    def abandon(self) -> None:
        """Give the lease back at once, from any thread (a stop whose run did not end within
        its grace, before the process exits without its finally blocks): no `check` of this
        run passes after it, so nothing more of ours is committed, and the next run need not
        wait for the expiry."""
        self._stop.set()
        with self._mutex:
            etag, self.etag, self.lost = self.etag, None, True
            if etag is not None:
                try:
                    self.store.replace(self._body(0.0), etag)
                except Exception:  # noqa: BLE001  (it expires on its own)
                    pass
        with _HELD_MUTEX:
            _HELD.discard(self)

    def release(self) -> None:
        with _HELD_MUTEX:
            _HELD.discard(self)
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._mutex:
            if not self.lost and self.etag is not None:
                try:
                    self.store.replace(self._body(0.0), self.etag)
                except Exception:
                    pass  # it expires on its own
            self.etag = None


#: The leases this process holds now (`abandon_all`).
_HELD: set[Lease] = set()
_HELD_MUTEX = threading.Lock()


def abandon_all() -> int:
    """`Lease.abandon` every lease this process holds; how many there were."""
    with _HELD_MUTEX:
        held = list(_HELD)
    for lease in held:
        lease.abandon()
    return len(held)


def _alive(holder: dict) -> bool:
    """False only for a holder on this machine whose process is gone (killed with -9):
    its lease need not run out. Holders elsewhere are judged by their expiry alone."""
    if holder.get("host") != socket.gethostname() or not isinstance(holder.get("pid"), int):
        return True
    try:
        os.kill(holder["pid"], 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _parse(body: bytes) -> dict | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None  # e.g. the "pid N" of a flock-era lease file: no expiry, treated as expired
    return data if isinstance(data, dict) else None


def lease_ttl() -> float:
    return float(os.environ.get(TTL_ENV) or DEFAULT_TTL_S)


def lease_wait() -> float:
    return float(os.environ.get(WAIT_ENV) or DEFAULT_WAIT_S)


@contextmanager
def feed_lease(feed_dir: str, *, feed: str, timeout_s: float | None = None, poll_s: float = 0.2,
               ttl_s: float | None = None, store: LeaseStore | None = None) -> Iterator[Lease]:
    """Hold the feed's lease for the block, waiting up to ``timeout_s`` (default
    ``WATERLINE_LEASE_WAIT_S``, else 600 s) for it; `LeaseBusy` when it does not come."""
    timeout_s = lease_wait() if timeout_s is None else timeout_s
    lease = Lease(store or store_for(str(feed_dir)), feed=feed, ttl_s=ttl_s or lease_ttl())
    deadline = time.monotonic() + timeout_s
    while (holder := lease.try_acquire()) is not None:
        if time.monotonic() >= deadline:
            raise LeaseBusy(
                f"feed {feed}: busy, lease {lease.store.where} held by {holder} for over {timeout_s:.0f}s"
            )
        time.sleep(poll_s)
    try:
        yield lease
    finally:
        lease.release()
