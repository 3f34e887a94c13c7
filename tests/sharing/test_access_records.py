"""The access log as data: every request of two servers sharing one store, in one Delta table (no Spark)."""

from __future__ import annotations

import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from tests.engine.feedkit import make_spec
from tests.sharing.conftest import AUDIENCES, TIERS, LiveServer, serve


def _get(endpoint: str, path: str, token: str) -> int:
    request = urllib.request.Request(endpoint + path, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_two_servers_log_every_request_of_every_recipient_and_refusal(tmp_path):
    from waterline.sharing.server import SharingServer

    spec = make_spec(tmp_path, TIERS, audiences=AUDIENCES)
    first = serve(spec, tmp_path)  # creates a token per recipient in the spec's store
    second = LiveServer(SharingServer([spec], first.store))  # another server process on the same store
    first.sharing.access.flush_s = second.sharing.access.flush_s = 0.2  # several batches per server
    calls = [(server, recipient, path) for server in (first, second) for recipient in AUDIENCES
             for path in ("/shares", "/shares/f/schemas/tiers/tables")] * 10
    try:
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(lambda c: _get(c[0].endpoint, c[2], first.tokens[c[1]]), calls))
        assert _get(second.endpoint, "/shares", "wlds_not-a-token") == 401
    finally:
        first.stop()
        second.stop()  # stopping flushes what is queued
    assert set(codes) == {200}
    records = first.sharing.access.read().to_pylist()
    assert len(records) == len(calls) + 1  # nothing lost, nothing twice
    served = [r for r in records if r["status"] == 200]
    assert sorted((r["recipient"], r["endpoint"]) for r in served) == sorted((c[1], c[2]) for c in calls)
    tokens = {r: rec.id for r, rec in ((r, first.store.authenticate_record(t, 0)) for r, t in first.tokens.items())}
    assert all(r["token_id"] == tokens[r["recipient"]] for r in served)
    [refused] = [r for r in records if r["status"] == 401]
    assert refused["recipient"] is None and refused["refused"] == "unknown token"
    assert first.sharing.access.dropped == 0
