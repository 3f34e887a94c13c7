"""A retired tier is no longer served: the sharing server refuses it with its own message, not
"does not exist" (issue 56). A real server on 127.0.0.1 over a feed whose `_wl_specs` retires
a tier, whether the server's spec file still names it (not restarted since the apply) or not."""

from __future__ import annotations

import pytest
import requests

from tests.engine.feedkit import make_spec
from tests.sharing.conftest import AUDIENCES, TIERS, serve
from waterline import Feed
from waterline.sharing.retired import retired_tiers

RETIRED = "table win was retired by the feed's spec version 2: it is no longer served"


def _get(live, path: str, recipient: str = "news") -> requests.Response:
    return requests.get(live.endpoint + path, headers={"Authorization": f"Bearer {live.tokens[recipient]}"},
                        timeout=30)


@pytest.mark.parametrize("restarted", [False, True])
def test_a_retired_tier_is_refused_with_its_own_message(tmp_path, restarted):
    old = make_spec(tmp_path, TIERS, audiences=AUDIENCES)
    Feed(old).apply()
    new_audiences = {"acme": ["d10"], "news": ["emb"]}
    new = make_spec(tmp_path, {t: p for t, p in TIERS.items() if t != "win"}, audiences=new_audiences)
    assert Feed(new).apply()[0].version == 2
    live = serve(new if restarted else old, tmp_path, audiences=new_audiences if restarted else AUDIENCES)
    try:
        for suffix in ("/metadata", "/version"):
            resp = _get(live, f"/shares/f/schemas/tiers/tables/win{suffix}")
            assert resp.status_code == 404 and resp.json() == {"errorCode": "RESOURCE_DOES_NOT_EXIST",
                                                               "message": RETIRED}, resp.text
        listed = _get(live, "/shares/f/schemas/tiers/tables").json()["items"]
        assert [t["name"] for t in listed] == ["emb"]
        unknown = _get(live, "/shares/f/schemas/tiers/tables/nope/metadata").json()["message"]
        assert unknown == "table nope does not exist or is not shared with you"
    finally:
        live.stop()


def test_retired_tiers_follow_every_version_and_a_name_back_is_served():
    rows = [{"version": 1, "release_part": '{"tiers": {"a": "TRUE", "b": "TRUE"}}'},
            {"version": 3, "release_part": '{"tiers": {"c": "TRUE"}}'},
            {"version": 2, "release_part": '{"tiers": {"a": "TRUE"}}'},
            {"version": 4, "release_part": '{"tiers": {"c": "TRUE", "a": "TRUE"}}'}]
    assert retired_tiers(rows) == {"b": 2}
    assert retired_tiers(rows[:3]) == {"b": 2, "a": 3}
