"""The change data feed migration: a tier table written before tiers kept a change data
feed gets it on its next release, and that release's inserts, updates and deletes are
in `Feed.changes` and in the Delta Sharing server's change queries."""

from __future__ import annotations

import time

import pytest
import requests

from tests.engine.feedkit import far_future_clock, make_spec, write_partition
from tests.engine.model import MINUTE, POLICIES, FeedModel, expected_tier
from tests.sharing.conftest import LiveServer
from tests.sharing.scenario import BASE_US, row, source
from waterline.engine.delta.table_log import TableLog
from waterline.engine.tables import feed_tables
from waterline.engine.release import release as release_step
from waterline.engine.tables import spark_tables as tables
from waterline.errors import WaterlineError
from waterline.sharing.server import SharingServer
from waterline.sharing.tokens import TokenStore

pytestmark = pytest.mark.spark

TIERS = {"d10": POLICIES["d10"]}


def _state(rows: dict) -> dict:
    return {key: payload for key, (payload, _seq) in rows.items()}


def test_a_tier_without_change_feed_gets_it_on_the_next_release(spark, tmp_path, monkeypatch):
    from waterline import Feed

    spec = make_spec(tmp_path, TIERS, audiences={"acme": ["d10"]})
    feed = Feed(spec, spark=spark, clock=far_future_clock())
    model = FeedModel(TIERS)
    path = spec.tier_path("d10")

    def step(rows, minute):
        write_partition(tmp_path, "a", [source(r) for r in rows])
        feed.ingest("a")
        model.ingest("a", rows)
        feed.release(as_of=BASE_US + minute * MINUTE)
        return expected_tier(model, "d10", BASE_US + minute * MINUTE)

    # The old way: tier tables created and released with no change data feed property.
    with monkeypatch.context() as old:
        old.setattr(tables, "TIER_DEFAULTS", {})
        old.setattr(release_step, "ensure_change_feed", lambda spark, path: False)
        before = step([row(1, 0, "x"), row(2, 1, "y"), row(3, 2, "z")], 15)
    log = TableLog.open(path)
    assert log.exists and not tables.change_feed_enabled(log)
    assert tables.CHANGE_FEED not in log.configuration
    old_version = log.version
    with pytest.raises(WaterlineError, match="tier d10: no change data since version 0"):
        feed.changes("d10")

    # The next release (new code) turns it on first, then merges: update 1, delete 2, insert 4.
    after = step([row(1, 0, "x2"), row(3, 2, "z"), row(4, 3, "w")], 25)
    log = TableLog.open(path)
    assert tables.change_feed_enabled(log)
    assert feed_tables.tier_state(log).w == BASE_US + 25 * MINUTE  # the property-only commit did not hide the state
    changes = feed.changes("d10", since=old_version + 1).to_pylist()
    kinds = {}
    for c in changes:
        kinds.setdefault(c["_change_type"], set()).add(c["id"])
    assert kinds == {"update_preimage": {1}, "update_postimage": {1}, "delete": {2}, "insert": {4}}, kinds
    assert {c["_commit_version"] for c in changes} <= set(range(old_version + 1, log.version + 1))
    replayed = {("a", r["id"]): r["v"] for r in changes if r["_change_type"] in ("insert", "update_postimage")}
    assert {k: v[0][4] for k, v in after.items()} == {**{k: v[0][4] for k, v in before.items() if k != ("a", 2)},
                                                      **replayed}
    # a later release is incremental as usual
    assert not tables.ensure_change_feed(spark, path)

    # Delta Sharing: a change query from before the migration is refused with the protocol's
    # error; from the migration on, it carries the same changes.
    store = TokenStore(tmp_path / "tokens.json")
    now = int(time.time() * 1000)
    token, _ = store.create("acme", now_ms=now, expires_ms=now + 600_000)
    server = LiveServer(SharingServer([spec], store))
    try:
        auth = {"Authorization": f"Bearer {token}"}
        base = f"{server.endpoint}/shares/f/schemas/tiers/tables/d10"
        refused = requests.get(base + "/changes", params={"startingVersion": 0}, headers=auth, timeout=30)
        assert refused.status_code == 400 and refused.json()["errorCode"] == "INVALID_PARAMETER_VALUE"
        assert str(tmp_path) not in refused.text
        served = requests.get(base + "/changes", params={"startingVersion": old_version + 1}, headers=auth,
                              timeout=30)
        assert served.status_code == 200 and '"cdf"' in served.text
        meta = requests.get(base + "/metadata", headers=auth, timeout=30)
        assert '"enableChangeDataFeed":"true"' in meta.text
    finally:
        server.stop()
