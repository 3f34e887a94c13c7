"""Delta Sharing of tiers on an S3 warehouse (s3proxy on 127.0.0.1): the same scenario as
test_sharing.py, read with the official `delta-sharing` client through pre-signed S3 URLs;
the token store is an object in the warehouse's bucket.

s3proxy checks a signature against the request's path as sent, and the client's HTTP
stack (fsspec -> aiohttp -> yarl) rewrites ``%3D`` to ``=`` in the partition folder
(``_wl_partition=a``) unless fsspec's ``http`` filesystem is told the URLs are already
encoded: so this module sets that option, as a subscriber on such a store would
(``FSSPEC_HTTP='{"encoded": true}'``; docs/sharing.md, "S3 warehouses").
"""

from __future__ import annotations

import json
import time
import uuid

import pytest
import requests

from tests.engine.feedkit import far_future_clock, make_spec
from tests.engine.model import FeedModel
from tests.sharing.conftest import AUDIENCES, TIERS, serve
from tests.sharing.scenario import SECRET, replay, rows, run_scenario, url
from waterline.engine.delta import storage
from waterline.sharing.tokens import TokenStore, default_store_path

pytestmark = pytest.mark.spark

delta_sharing = pytest.importorskip("delta_sharing")


@pytest.fixture(scope="module", autouse=True)
def urls_sent_as_signed():
    import fsspec.config

    saved = dict(fsspec.config.conf.get("http", {}))
    fsspec.config.conf.setdefault("http", {})["encoded"] = True
    yield
    fsspec.config.conf["http"] = saved


@pytest.fixture(scope="module")
def s3_shared(s3_spark, s3proxy, tmp_path_factory):
    from waterline import Feed

    root = tmp_path_factory.mktemp("sharing-s3")
    spec = make_spec(root, TIERS, audiences=AUDIENCES, warehouse=s3proxy.uri(f"sharing-{uuid.uuid4().hex[:6]}"))
    feed = Feed(spec, spark=s3_spark, clock=far_future_clock())
    server = serve(spec, root)
    yield root, spec, feed, FeedModel(TIERS), server
    server.stop()


@pytest.fixture(scope="module")
def s3_history(s3_shared):
    root, spec, feed, model, live = s3_shared
    return run_scenario(root, spec, feed, model, AUDIENCES,
                        lambda recipient, tier: delta_sharing.load_as_pandas(url(live.profiles, recipient, tier)))


def _query(live, recipient, tier, body=None):
    resp = requests.post(f"{live.endpoint}/shares/f/schemas/tiers/tables/{tier}/query", json=body or {},
                         headers={"Authorization": f"Bearer {live.tokens[recipient]}"}, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp


def test_every_recipient_reads_the_oracle_through_presigned_urls(s3_shared, s3_history, s3proxy):
    _, spec, feed, _, live = s3_shared
    for step in s3_history[:-1]:  # time travel
        for recipient, tiers in AUDIENCES.items():
            for tier in tiers:
                version, expected = step[tier]
                got = rows(delta_sharing.load_as_pandas(url(live.profiles, recipient, tier), version=version))
                assert got == expected, f"{recipient} {tier} at version {version}"
    for recipient, tiers in AUDIENCES.items():
        for tier in tiers:
            changes = delta_sharing.load_table_changes_as_pandas(url(live.profiles, recipient, tier),
                                                                 starting_version=0)
            assert replay(changes) == s3_history[-1][tier][1], f"{recipient} {tier} changes"
            assert SECRET not in set(changes["v"].dropna())
            assert sorted(feed.changes(tier).to_pandas()["_change_type"]) == sorted(changes["_change_type"])
            # the kernel reader (use_delta_format=True) fetches the same pre-signed URLs
            delta = delta_sharing.load_as_pandas(url(live.profiles, recipient, tier), use_delta_format=True)
            assert rows(delta) == s3_history[-1][tier][1], f"{recipient} {tier} in the Delta format"
    # the file URLs are pre-signed S3 URLs of the tier's own files: the bytes bypass the server
    text = _query(live, "acme", "d10").text
    assert s3proxy.endpoint in text and "X-Amz-Signature" in text and "/files/" not in text
    for internal in ("/f/held", "/f/quarantine", "_wl_lease", "_wl_sharing", "waterline.state"):
        assert internal not in text, internal


def test_a_presigned_url_cannot_be_altered(s3_shared, s3_history):
    *_, live = s3_shared
    files = [line for line in _query(live, "acme", "d10").text.splitlines() if '"file"' in line]
    first = json.loads(files[0])["file"]["url"]
    assert requests.get(first, timeout=30).status_code == 200
    # another object under the same signature (the held table's log, say) is refused
    forged = first.replace("/tiers/d10/", "/held/", 1)
    assert forged != first and requests.get(forged, timeout=30).status_code == 403
    head, _, signature = first.rpartition("X-Amz-Signature=")
    tampered = head + "X-Amz-Signature=" + ("0" if signature[0] != "0" else "1") + signature[1:]
    assert requests.get(tampered, timeout=30).status_code == 403


def test_the_token_store_is_an_object_in_the_bucket_and_revokes_reach_the_server(s3_shared, s3_history, s3proxy):
    root, spec, _, _, live = s3_shared
    where = default_store_path(spec)
    assert isinstance(where, str) and where.startswith("s3a://")
    bucket, key = storage.split_s3(where)
    body = s3proxy.client().get_object(Bucket=bucket, Key=key)["Body"].read().decode()
    assert live.tokens["acme"] not in body and '"sha256"' in body
    assert not list(root.rglob("tokens.json"))  # nothing local
    # another process (the CLI) creates and revokes a token: the running server follows
    other = TokenStore(where)
    token, record = other.create("acme", now_ms=int(time.time() * 1000), expires_ms=None)
    path = f"{live.endpoint}/shares/f/schemas/tiers/tables/d10/version"
    deadline = time.monotonic() + 10
    while requests.get(path, headers={"Authorization": f"Bearer {token}"}, timeout=30).status_code != 200:
        assert time.monotonic() < deadline, "the server never saw the new token"
        time.sleep(0.2)
    other.revoke("acme", now_ms=int(time.time() * 1000), token_id=record.id)
    deadline = time.monotonic() + 10
    while (resp := requests.get(path, headers={"Authorization": f"Bearer {token}"}, timeout=30)).status_code != 401:
        assert time.monotonic() < deadline, "the server never saw the revoke"
        time.sleep(0.2)
    assert resp.json()["errorCode"] == "UNAUTHENTICATED"
    assert requests.get(path, headers={"Authorization": f"Bearer {live.tokens['acme']}"}, timeout=30).status_code == 200
