"""The entitlement trail: token creation, revocation, expiry and audiences over time (no Spark)."""

from __future__ import annotations

import json

import yaml

from tests.engine.feedkit import spec_dict
from tests.sharing.test_tokens_cli import TIERS, _cli
from waterline.spec import spec_from_dict

MS = 1_000


def _spec(root, audiences):
    return spec_from_dict({**spec_dict(root, TIERS), "audiences": audiences})


def test_who_could_read_what_across_create_revoke_expiry_and_a_spec_change(tmp_path):
    from waterline.sharing.entitlements import Entitlement, entitled_at
    from waterline.sharing.server import SharingServer
    from waterline.sharing.tokens import TokenStore

    t0 = 1_790_000_000_000  # ms
    store = TokenStore(tmp_path / "tokens.json")
    SharingServer([_spec(tmp_path, {"acme": ["late"], "news": ["realtime"]})], store, now_ms=lambda: t0)
    _, acme = store.create("acme", now_ms=t0 + 10, expires_ms=t0 + 400)
    _, news = store.create("news", now_ms=t0 + 20, expires_ms=None)
    SharingServer([_spec(tmp_path, {"acme": ["late", "realtime"], "news": ["realtime"]})], store,
                  now_ms=lambda: t0 + 100)  # a restart with the spec changed
    store.revoke("news", now_ms=t0 + 200)
    events = TokenStore(tmp_path / "tokens.json").trail.events()  # another process reads the same trail
    assert [e["event"] for e in events] == ["audiences", "token_created", "token_created", "audiences",
                                           "token_revoked"]

    def at(ms: int) -> list[Entitlement]:
        return entitled_at(events, ms * MS)

    assert at(t0 + 5) == []  # audiences, but no token yet
    assert at(t0 + 20) == [Entitlement("f", "acme", ("late",), (acme.id,)),
                           Entitlement("f", "news", ("realtime",), (news.id,))]
    assert at(t0 + 150)[0] == Entitlement("f", "acme", ("late", "realtime"), (acme.id,))
    assert [e.recipient for e in at(t0 + 200)] == ["acme"]  # revoked at that instant
    assert at(t0 + 400) == []  # acme's token expired then


def test_waterline_share_entitlements_from_the_command_line(tmp_path):
    spec_file = tmp_path / "f.yaml"
    spec_file.write_text(yaml.safe_dump({**spec_dict(tmp_path, TIERS), "audiences": {"acme": ["late"]}}))
    made = _cli("share", "token", "create", str(spec_file), "acme", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    now = _cli("share", "entitlements", str(spec_file), "--at", "now", "--json", cwd=tmp_path)
    assert now.returncode == 0, now.stderr
    [entitled] = json.loads(now.stdout)["entitlements"]
    assert (entitled["recipient"], entitled["tiers"]) == ("acme", ["late"])
    assert _cli("share", "token", "revoke", str(spec_file), "acme", cwd=tmp_path).returncode == 0
    after = _cli("share", "entitlements", str(spec_file), "--at", "now", cwd=tmp_path)
    assert after.returncode == 0 and "nobody" in after.stdout
    before = _cli("share", "entitlements", str(spec_file), "--at", "now - 1 day", cwd=tmp_path)
    assert "nobody" in before.stdout
    bad = _cli("share", "entitlements", str(spec_file), "--at", "yesterday-ish", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --at:") and "Traceback" not in bad.stderr
    from deltalake import DeltaTable

    assert DeltaTable(str(tmp_path / "wh" / "_wl_sharing" / "entitlements")).to_pyarrow_table().num_rows == 3
