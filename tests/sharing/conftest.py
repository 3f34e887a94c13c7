"""A feed with audiences, released by the real engine, served on 127.0.0.1 for the official client."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest
import uvicorn

from tests.engine.feedkit import far_future_clock, make_spec
from tests.engine.model import POLICIES, FeedModel
from waterline.sharing.app import build_app, uvicorn_config
from waterline.sharing.server import SharingServer
from waterline.sharing.tokens import TokenStore, default_store_path

TIERS = {t: POLICIES[t] for t in ("d10", "win", "emb")}
AUDIENCES = {"acme": ["d10"], "news": ["win", "emb"]}


class LiveServer:
    """`waterline.sharing.server` under uvicorn in a thread, on a free loopback port."""

    def __init__(self, sharing_server: SharingServer) -> None:
        self.sharing = sharing_server
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.uvicorn = uvicorn.Server(uvicorn_config(build_app(sharing_server), host="127.0.0.1", port=self.port))
        self.thread = threading.Thread(target=self.uvicorn.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.uvicorn.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("sharing server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        self.uvicorn.should_exit = True
        self.thread.join(timeout=10)


def write_profile(folder: Path, name: str, endpoint: str, token: str) -> str:
    path = folder / f"{name}.share"
    path.write_text(json.dumps({"shareCredentialsVersion": 1, "endpoint": endpoint, "bearerToken": token}))
    return str(path)


def serve(spec, root: Path, *, audiences=AUDIENCES, url_ttl_seconds: int = 600,
          token_ttl_ms: int = 3_600_000) -> LiveServer:
    """A live server for ``spec`` whose token store is the spec's default one (a file, or an
    object in an S3 warehouse), with one token (living ``token_ttl_ms``) and a profile file
    per recipient."""
    store = TokenStore(default_store_path(spec))
    now = int(time.time() * 1000)
    tokens = {r: store.create(r, now_ms=now, expires_ms=now + token_ttl_ms)[0] for r in audiences}
    server = LiveServer(SharingServer([spec], store, url_ttl_seconds=url_ttl_seconds))
    server.tokens = tokens
    server.store = store
    server.profiles = {r: write_profile(root, r, server.endpoint, t) for r, t in tokens.items()}
    return server


@pytest.fixture(scope="module")
def shared(spark, tmp_path_factory):
    """(root, spec, feed, model): a feed with tiers d10/win/emb and audiences acme/news."""
    from waterline import Feed

    root = tmp_path_factory.mktemp("sharing")
    spec = make_spec(root, TIERS, audiences=AUDIENCES)
    feed = Feed(spec, spark=spark, clock=far_future_clock())
    return root, spec, feed, FeedModel(TIERS)


@pytest.fixture(scope="module")
def live(shared):
    """The server for ``shared``'s feed, with a token per recipient and profile files."""
    root, spec, _, _ = shared
    server = serve(spec, root)
    yield server
    server.stop()
