"""Spec key `audiences`, the token store and `waterline share` commands (no Spark, no server)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.engine.feedkit import spec_dict
from waterline.errors import SpecError
from waterline.spec import spec_from_dict

TIERS = {"realtime": "TRUE", "late": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"}


def test_audiences_validate_and_round_trip(tmp_path):
    spec = spec_from_dict({**spec_dict(tmp_path, TIERS), "audiences": {"acme": ["late"], "news": "realtime"}})
    assert spec.audiences == {"acme": ("late",), "news": ("realtime",)}
    assert spec_from_dict(spec.to_dict()) == spec
    for bad, where in (({"acme": ["nope"]}, "audiences.acme"), ({"acme": []}, "audiences.acme"),
                       ({"Acme!": ["late"]}, "audiences.Acme!"), (["late"], "audiences")):
        with pytest.raises(SpecError) as err:
            spec_from_dict({**spec_dict(tmp_path, TIERS), "audiences": bad})
        assert f": {where}: " in str(err.value) and "\n" not in str(err.value)


def test_the_dagster_component_takes_audiences():
    from waterline.dagster.component import ReleaseFeed

    assert "audiences" in ReleaseFeed.model_fields


def test_store_keeps_hashes_only_and_authenticates(tmp_path):
    from waterline.sharing.tokens import AuthError, TokenStore

    store = TokenStore(tmp_path / "tokens.json")
    token, record = store.create("acme", now_ms=1000, expires_ms=5000)
    assert token not in (tmp_path / "tokens.json").read_text()
    assert (tmp_path / "tokens.json").stat().st_mode & 0o077 == 0
    assert store.authenticate(token, 2000) == "acme"
    with pytest.raises(AuthError, match="expired"):
        store.authenticate(token, 5000)
    store.revoke("acme", now_ms=3000)
    with pytest.raises(AuthError, match="revoked"):
        TokenStore(tmp_path / "tokens.json").authenticate(token, 3001)  # another process sees the revoke


def _cli(*args, cwd):
    return subprocess.run([str(Path(sys.executable).parent / "waterline"), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def test_cli_token_create_list_revoke_and_errors(tmp_path):
    spec_file = tmp_path / "f.yaml"
    spec_file.write_text(yaml.safe_dump({**spec_dict(tmp_path, TIERS), "audiences": {"acme": ["late"]}}))
    made = _cli("share", "token", "create", str(spec_file), "acme", "--expires", "30d",
                "--endpoint", "https://data.example.com/sharing/", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    profile = json.loads(made.stdout)
    assert profile["shareCredentialsVersion"] == 1 and profile["endpoint"] == "https://data.example.com/sharing"
    assert profile["bearerToken"].startswith("wlds_") and profile["expirationTime"].endswith("Z")
    store = tmp_path / "wh" / "_wl_sharing" / "tokens.json"
    assert profile["bearerToken"] not in store.read_text()
    listed = _cli("share", "token", "list", str(spec_file), cwd=tmp_path)
    assert listed.returncode == 0 and "acme  active" in listed.stdout and profile["bearerToken"] not in listed.stdout
    assert _cli("share", "token", "revoke", str(spec_file), "acme", cwd=tmp_path).returncode == 0
    assert "acme  revoked" in _cli("share", "token", "list", str(spec_file), cwd=tmp_path).stdout
    for args in (("share", "token", "create", str(spec_file), "mallory"),
                 ("share", "token", "revoke", str(spec_file), "acme"),
                 ("share", "token", "create", str(spec_file), "acme", "--expires", "soon"),
                 ("share", "serve", str(spec_file), "--host", "0.0.0.0")):
        out = _cli(*args, cwd=tmp_path)
        assert out.returncode != 0 and out.stderr.startswith("error: ") and out.stderr.count("\n") == 1, (args, out)
