"""Delta Sharing of tiers, end to end: the real engine releases, the server serves on 127.0.0.1,
the official `delta-sharing` client reads; every recipient's rows equal `waterline.semantics`.

One scenario (module fixtures): ingest, release; revise (a correction, a removal, a new
row), release; release later so the `win` tier expires rows. After each release each
recipient's snapshot (and time travel to earlier versions) equals the oracle, and its
change feed, replayed, gives the same rows. Then the refusals.
"""

from __future__ import annotations

import json
import time

import pytest
import requests

from tests.sharing.conftest import AUDIENCES
from tests.sharing.scenario import SECRET, replay, rows, run_scenario, url

pytestmark = pytest.mark.spark

delta_sharing = pytest.importorskip("delta_sharing")


def _url(live, recipient, tier):
    return url(live.profiles, recipient, tier)


@pytest.fixture(scope="module")
def history(shared, live):
    """Run the scenario; after each release record each tier's version and the oracle's rows."""
    root, spec, feed, model = shared
    return run_scenario(root, spec, feed, model, AUDIENCES,
                        lambda recipient, tier: delta_sharing.load_as_pandas(_url(live, recipient, tier)))


def test_each_recipient_reads_the_oracle_after_every_release_and_time_travels(live, history):
    for step in history[:-1]:  # earlier versions, by version number
        for recipient, tiers in AUDIENCES.items():
            for tier in tiers:
                version, expected = step[tier]
                got = rows(delta_sharing.load_as_pandas(_url(live, recipient, tier), version=version))
                assert got == expected, f"{recipient} {tier} at version {version}"
    assert any(step["win"][1] != history[-1]["win"][1] for step in history[:-1])  # expiry removed rows


def test_listing_shows_only_the_recipients_tiers(live, history):
    for recipient, tiers in AUDIENCES.items():
        client = delta_sharing.SharingClient(live.profiles[recipient])
        assert [s.name for s in client.list_shares()] == ["f"]
        assert sorted(t.name for t in client.list_all_tables()) == sorted(tiers)


def test_changes_replay_to_the_oracle_and_expiry_is_a_delete(shared, live, history):
    _, _, feed, _ = shared
    for recipient, tiers in AUDIENCES.items():
        for tier in tiers:
            changes = delta_sharing.load_table_changes_as_pandas(_url(live, recipient, tier), starting_version=0)
            assert replay(changes) == history[-1][tier][1], f"{recipient} {tier} changes"
            mine = feed.changes(tier).to_pandas()  # the Python API reads the same feed
            assert sorted(mine["_change_type"]) == sorted(changes["_change_type"])
    win = delta_sharing.load_table_changes_as_pandas(_url(live, "news", "win"), starting_version=0)
    last = win[win["_commit_version"] == win["_commit_version"].max()]
    assert set(last["_change_type"]) == {"delete"}  # the expiry-only release deletes


def test_the_delta_format_reads_what_parquet_reads(shared, live, history):
    """``use_delta_format=True``: the official client's kernel reader (delta-kernel-rust) gets
    the answers as Delta actions and reads the same rows: snapshots, time travel and changes."""
    for recipient, tiers in AUDIENCES.items():
        for tier in tiers:
            where = _url(live, recipient, tier)
            assert rows(delta_sharing.load_as_pandas(where, use_delta_format=True)) == history[-1][tier][1], tier
            version, expected = history[0][tier]
            assert rows(delta_sharing.load_as_pandas(where, version=version, use_delta_format=True)) == expected, tier
            changes = delta_sharing.load_table_changes_as_pandas(where, starting_version=0, use_delta_format=True)
            assert replay(changes) == history[-1][tier][1], f"{recipient} {tier} changes"
    # a client that accepts both formats is answered in parquet, as the capabilities header says
    token = live.tokens["acme"]
    both = _get(live, "/shares/f/schemas/tiers/tables/d10/metadata", token,
                headers={"delta-sharing-capabilities": "responseformat=delta,parquet"})
    assert both.headers["delta-sharing-capabilities"] == "responseformat=parquet"
    delta = _get(live, "/shares/f/schemas/tiers/tables/d10/metadata", token,
                 headers={"delta-sharing-capabilities": "responseformat=delta"})
    assert delta.headers["delta-sharing-capabilities"] == "responseformat=delta"
    protocol, metadata = [json.loads(line) for line in delta.text.splitlines()]
    assert protocol["protocol"]["deltaProtocol"]["minReaderVersion"] == 1
    assert metadata["metaData"]["deltaMetadata"]["configuration"] == {"delta.enableChangeDataFeed": "true"}


# -- refusals -------------------------------------------------------------------------------


def _get(live, path, token=None, method="GET", **kw):
    headers = kw.pop("headers", {})
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return requests.request(method, live.endpoint + path, headers=headers, timeout=30, **kw)


def _refused(resp, status, code):
    assert resp.status_code == status, (resp.status_code, resp.text)
    body = resp.json()
    assert set(body) == {"errorCode", "message"} and body["errorCode"] == code, body
    return body


BAD_TABLES = ["win", "emb", "held", "quarantine", "_wl_lease", "lease", "nope", "..%2Fheld", "..%2F..%2Ff%2Fheld",
              "d10%00", "d10'%20OR%201=1", "%2e%2e", "D10%2F..%2F..%2Fheld", "_wl_sharing"]


def test_other_tiers_internal_tables_and_made_up_names_do_not_exist(shared, live, history):
    _, spec, _, _ = shared
    token = live.tokens["acme"]
    bodies = []
    for bad in BAD_TABLES:
        for suffix, method in (("/metadata", "GET"), ("/version", "GET"), ("/query", "POST"), ("/changes", "GET")):
            resp = _get(live, f"/shares/f/schemas/tiers/tables/{bad}{suffix}", token, method,
                        params={"startingVersion": 0} if suffix == "/changes" else None,
                        json={} if method == "POST" else None)
            bodies.append(resp.text)
            assert resp.status_code == 404 and resp.json()["errorCode"] == "RESOURCE_DOES_NOT_EXIST", (bad, resp.text)
    for path in ("/shares/held", "/shares/f%2Fheld/schemas", "/shares/f/schemas/held/tables",
                 "/shares/f/schemas/..%2F..%2Fheld/tables", "/shares/nope/all-tables",
                 "/shares/f/schemas/tiers/tables/d10/../../../held/metadata"):
        resp = _get(live, path, token)
        bodies.append(resp.text)
        _refused(resp, 404, "RESOURCE_DOES_NOT_EXIST")
    # the table named in upper case is the same table (names are case-insensitive)
    assert _get(live, "/shares/F/schemas/TIERS/tables/D10/version", token).status_code == 200
    for text in bodies:
        assert str(spec.warehouse) not in text and "held" not in text.replace('"', " ").split("message")[0]


def test_tokens_missing_malformed_wrong_expired_revoked(shared, live, history):
    now = int(time.time() * 1000)
    expired, _ = live.store.create("acme", now_ms=now - 10_000, expires_ms=now - 1)
    revoked, record = live.store.create("acme", now_ms=now, expires_ms=None)
    live.store.revoke("acme", now_ms=now, token_id=record.id)
    path = "/shares/f/schemas/tiers/tables/d10/metadata"
    _refused(_get(live, path), 401, "UNAUTHENTICATED")
    for header in ("Bearer", "Bearer ", "Basic YWNtZTp4", live.tokens["acme"], "Bearer x" * 100):
        _refused(_get(live, path, headers={"Authorization": header}), 401, "UNAUTHENTICATED")
    for token in ("wlds_" + "A" * 43, live.tokens["acme"][:-1], live.tokens["acme"] + "x", expired, revoked,
                  "not-a-token", "ünïcode"):
        _refused(_get(live, path, token), 401, "UNAUTHENTICATED")
    assert _get(live, path, live.tokens["acme"]).status_code == 200


def test_file_urls_expire_and_cannot_be_altered(shared, live, history):
    token = live.tokens["acme"]
    resp = _get(live, "/shares/f/schemas/tiers/tables/d10/query", token, "POST", json={})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/x-ndjson")
    files = [json.loads(x)["file"] for x in resp.text.splitlines() if '"file"' in x]
    assert files
    url = files[0]["url"]
    assert requests.get(url, timeout=30).status_code == 200
    head, _, mac = url.rpartition(".")
    _refused(requests.get(head + "." + ("0" if mac[0] != "0" else "1") + mac[1:], timeout=30), 403, "PERMISSION_DENIED")
    real = live.sharing.now_ms
    live.sharing.now_ms = lambda: real() + live.sharing.url_ttl_seconds * 1000 + 1
    try:
        _refused(requests.get(url, timeout=30), 403, "PERMISSION_DENIED")
    finally:
        live.sharing.now_ms = real


def test_bounds_pages_and_bad_parameters(live, history):
    token = live.tokens["news"]
    first = _get(live, "/shares/f/all-tables", token, params={"maxResults": 1}).json()
    assert len(first["items"]) == 1 and first["nextPageToken"]
    second = _get(live, "/shares/f/all-tables", token, params={"maxResults": 1, "pageToken": first["nextPageToken"]})
    assert [t["name"] for t in first["items"] + second.json()["items"]] == AUDIENCES["news"]
    assert "nextPageToken" not in second.json()
    _refused(_get(live, "/shares", token, params={"maxResults": "many"}), 400, "INVALID_PARAMETER_VALUE")
    _refused(_get(live, "/shares", token, params={"pageToken": "garbage!"}), 400, "INVALID_PARAMETER_VALUE")
    _refused(_get(live, "/shares/f/schemas", token, params={"pageToken": first["nextPageToken"]}), 400,
             "INVALID_PARAMETER_VALUE")
    query = "/shares/f/schemas/tiers/tables/win/query"
    _refused(_get(live, query, token, "POST", data=b"{" + b" " * 70_000 + b"}"), 413, "MALFORMED_REQUEST")
    _refused(_get(live, query, token, "POST", data=b"not json"), 400, "MALFORMED_REQUEST")
    _refused(_get(live, query, token, "POST", json={"version": 10_000}), 400, "INVALID_PARAMETER_VALUE")
    _refused(_get(live, query, token, "POST", json={"version": -1}), 400, "INVALID_PARAMETER_VALUE")
    _refused(_get(live, query, token, "POST", json={"timestamp": "yesterday"}), 400, "INVALID_PARAMETER_VALUE")
    _refused(_get(live, "/shares/f/schemas/tiers/tables/win/changes", token), 400, "INVALID_PARAMETER_VALUE")
    version = _get(live, "/shares/f/schemas/tiers/tables/win", token, "HEAD")
    assert version.status_code == 200 and int(version.headers["delta-table-version"]) >= 1


def test_no_response_holds_an_unreleased_row_or_an_internal_path(shared, live, history):
    _, spec, _, _ = shared
    for recipient, tiers in AUDIENCES.items():
        for tier in tiers:
            for df in (delta_sharing.load_as_pandas(_url(live, recipient, tier)),
                       delta_sharing.load_table_changes_as_pandas(_url(live, recipient, tier), starting_version=0)):
                assert SECRET not in set(df["v"].dropna()), (recipient, tier)
            token = live.tokens[recipient]
            base = f"/shares/f/schemas/tiers/tables/{tier}"
            for resp in (_get(live, base + "/metadata", token), _get(live, base + "/query", token, "POST", json={}),
                         _get(live, base + "/changes", token, params={"startingVersion": 0}),
                         _get(live, "/shares", token), _get(live, "/shares/f/all-tables", token)):
                assert resp.status_code == 200
                for secret in (spec.held_path, spec.quarantine_path, str(spec.warehouse), "waterline.state",
                               "pending", "next_due"):
                    assert secret not in resp.text, (secret, resp.text[:300])
