"""The feed lease against the real stores: a local folder and an S3 server (s3proxy)."""

from __future__ import annotations

import json
import time

import pytest

from waterline.engine.tables.lease import Lease, feed_lease, store_for
from waterline.errors import WaterlineError


@pytest.fixture(params=["local", "s3"])
def feed_dir(request, tmp_path):
    if request.param == "local":
        return str(tmp_path / "feed")
    s3proxy = request.getfixturevalue("s3proxy")
    return s3proxy.uri(f"leases/{tmp_path.name}/feed")


def _lease(feed_dir: str, ttl_s: float = 30.0) -> Lease:
    return Lease(store_for(feed_dir), feed="f", ttl_s=ttl_s, skew_s=0.2)


def test_a_second_acquirer_waits_then_fails_naming_the_holder(feed_dir):
    first = _lease(feed_dir)
    assert first.try_acquire() is None
    try:
        with pytest.raises(WaterlineError, match="busy, lease .*_wl_lease held by .* pid"):
            with feed_lease(feed_dir, feed="f", timeout_s=0.5, poll_s=0.1):
                pass
    finally:
        first.release()
    with feed_lease(feed_dir, feed="f", timeout_s=5) as lease:  # released: free at once
        lease.check()


def test_heartbeat_keeps_a_short_lease(feed_dir):
    holder = _lease(feed_dir, ttl_s=1.5)
    assert holder.try_acquire() is None
    try:
        time.sleep(2.5)  # longer than the TTL: only the renewals keep it
        holder.check()
        assert _lease(feed_dir).try_acquire() is not None
    finally:
        holder.release()


def test_expired_lease_is_taken_over_and_the_stale_holder_cannot_commit(feed_dir):
    stale = _lease(feed_dir, ttl_s=1.0)
    assert stale.try_acquire() is None
    stale._stop.set()  # paused: no more heartbeats (a GC pause, a stopped VM)
    stale._thread.join()
    time.sleep(1.5)
    successor = _lease(feed_dir, ttl_s=30.0)
    assert successor.try_acquire() is None, "an expired lease must be taken over"
    try:
        stale.renew()  # the stale holder wakes up: its conditional renewal fails
        assert stale.lost
        with pytest.raises(WaterlineError, match="lost the lease"):
            stale.check()
        successor.check()
        stale.release()  # must not free the successor's lease
        assert _lease(feed_dir).try_acquire() is not None
    finally:
        successor.release()


def test_two_takers_of_an_expired_lease_one_wins(feed_dir):
    old = _lease(feed_dir, ttl_s=0.5)
    assert old.try_acquire() is None
    old._stop.set()
    old._thread.join()
    time.sleep(1.0)
    a, b = _lease(feed_dir), _lease(feed_dir)
    store = a.store
    body, etag = store.read()
    # both saw the same expired lease; only one conditional replace can succeed
    wins = [store.replace(a._body(time.time() + 30), etag), store.replace(b._body(time.time() + 30), etag)]
    assert sum(w is not None for w in wins) == 1


def test_a_lease_of_a_killed_process_on_this_machine_is_taken_at_once(feed_dir):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    ghost = _lease(feed_dir, ttl_s=600)
    body = json.loads(ghost._body(time.time() + 600))
    body["pid"] = int(dead.stdout)  # a process that has exited (as after kill -9)
    assert ghost.store.create(json.dumps(body).encode()) is not None
    taker = _lease(feed_dir)
    assert taker.try_acquire() is None
    taker.release()
