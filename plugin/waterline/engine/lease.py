"""A per-feed lease that serialises ingests and releases of one feed.

An OS file lock (``flock``) on ``<feed_dir>/_wl_lease``: the kernel drops it when
the holder dies, even by ``kill -9``, so a crash never leaves a stale lease.
Limit: the warehouse must be on a filesystem shared by all writers of the feed
with working POSIX locks (a local disk or NFSv4). For an object-store warehouse
(``s3a://``) the lock file is local (``<tmp>/waterline-leases/``): it serialises
the writers of one machine only, until a lease on the store itself replaces it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from waterline.engine import storage
from waterline.errors import WaterlineError


@contextmanager
def feed_lease(feed_dir: str, *, feed: str, timeout_s: float = 600.0, poll_s: float = 0.2) -> Iterator[None]:
    """Hold the feed's lease for the duration of the block, waiting up to ``timeout_s``."""
    folder = storage.local_folder(feed_dir)
    if folder is None:  # object store: a machine-local lock file named after the feed's URI
        folder = Path(tempfile.gettempdir()) / "waterline-leases" / hashlib.sha256(feed_dir.encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "_wl_lease"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = path.read_text().strip() or "another process"
                    raise WaterlineError(
                        f"feed {feed}: busy, lease {path} held by {holder} for over {timeout_s:.0f}s"
                    ) from None
                time.sleep(poll_s)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock
