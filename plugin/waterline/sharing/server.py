"""A Delta Sharing server for a feed's tiers (ASGI: Starlette, served by uvicorn).

One share per feed, one schema (``tiers``), and as tables the tiers the
recipient's audiences allow (spec key ``audiences``). Only paths built by
`FeedSpec.tier_path` for an allowed tier are ever opened: the held table, the
quarantine, the lease and the token store have no name here. Snapshots and time
travel come from ``deltalake``; change queries from the tier's Delta change data
feed (the commit files' ``cdc``/``add``/``remove`` actions). Files reach clients
through short-lived URLs (`waterline.sharing.locations`): signed by this server
(`waterline.sharing.files`) for a local warehouse, pre-signed S3 URLs for an S3 one.
Every request leaves one access-log line (logger ``waterline.sharing.access``) and one
record in the access log table beside the token store (`waterline.sharing.access_records`).

Modules: `protocol` (pure protocol parts), `endpoints` (the REST handlers), `files`
(signed URLs and ``/files``), `locations` (local vs S3), `tokens` (bearer tokens),
and this one: who may see what, opening tables, the app, the access log, running.
See docs/sharing.md.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from waterline.engine.delta import storage
from waterline.errors import WaterlineError
from waterline.sharing import endpoints as E
from waterline.sharing import protocol as P
from waterline.sharing.access_records import AccessRecords, access_path
from waterline.sharing.files import ROUTE as FILE_ROUTE
from waterline.sharing.files import FileSigner, serve_file
from waterline.sharing.locations import TierLocation, s3_client, tier_location
from waterline.sharing.protocol import LOOPBACK, ShareError, check_bind  # noqa: F401  (re-exported)
from waterline.sharing.tokens import AuthError, TokenStore
from waterline.spec import FeedSpec

access_log = logging.getLogger("waterline.sharing.access")
log = logging.getLogger("waterline.sharing")

DEFAULT_URL_TTL = 15 * 60


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class SharingServer:
    """What the app serves: feeds (shares), the token store, the file-URL key and clock."""

    specs: list[FeedSpec]
    store: TokenStore
    url_ttl_seconds: int = DEFAULT_URL_TTL
    now_ms: Callable[[], int] = _now_ms
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    def __post_init__(self) -> None:
        self.feeds = {spec.feed: spec for spec in self.specs}
        for spec in self.specs:  # a signed URL must not outlive the files maintenance keeps
            keep = spec.maintenance.time_travel_us // 1_000_000
            if self.url_ttl_seconds > keep:
                raise WaterlineError(
                    f"feed {spec.feed}: --url-ttl {self.url_ttl_seconds}s is longer than its maintenance.time_travel "
                    f"({keep}s): `waterline maintain` could delete files a signed URL still names; shorten the "
                    "URL lifetime or lengthen time_travel")
        # every start is on the entitlement trail: what each feed's audiences were as it began serving
        self.store.trail.audiences({spec.feed: spec.audiences for spec in self.specs}, at_ms=self.now_ms())
        self.access = AccessRecords(access_path(self.store.where))
        self.signer = FileSigner(self.key, self.url_ttl_seconds)
        self._s3 = None
        self._s3_lock = threading.Lock()

    # -- who sees what ----------------------------------------------------------------

    def recipient(self, request: Request) -> str:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        try:
            if scheme.lower() != "bearer":
                raise AuthError("missing token" if not header else "malformed authorization header")
            record = self.store.authenticate_record(token.strip(), self.now_ms())
        except AuthError as exc:
            E.access(request)["refused"] = str(exc)
            raise P.unauthenticated() from None
        E.access(request).update(recipient=record.recipient, token_id=record.id)
        return record.recipient

    def shares_of(self, recipient: str) -> list[str]:
        return [feed for feed, spec in self.feeds.items() if spec.audiences.get(recipient)]

    def share(self, recipient: str, share: str) -> FeedSpec:
        share = P.name(share, "share")
        spec = self.feeds.get(share)
        if spec is None or not spec.audiences.get(recipient):
            raise P.not_found("share", share)
        return spec

    def schema(self, recipient: str, share: str, schema: str) -> FeedSpec:
        spec = self.share(recipient, share)
        if P.name(schema, "schema") != P.SCHEMA:
            raise P.not_found("schema", schema)
        return spec

    def table(self, request: Request, recipient: str, share: str, schema: str, table: str) -> tuple[FeedSpec, str]:
        spec = self.schema(recipient, share, schema)
        tier = P.name(table, "table")
        if tier not in spec.audiences.get(recipient, ()) or tier not in spec.tiers:
            raise P.not_found("table", tier)
        E.access(request)["table"] = f"{spec.feed}.{P.SCHEMA}.{tier}"
        return spec, tier

    # -- Delta reads ----------------------------------------------------------------------

    def open(self, spec: FeedSpec, tier: str, version: int | None = None):
        path = spec.tier_path(tier)
        if not storage.is_delta_table(path):
            raise P.not_found("table", tier)  # declared but never written: nothing to share yet
        table = storage.delta_table(path)
        if version is not None:
            latest = table.version()
            if version > latest:
                raise P.invalid(f"version {version} is after the table's latest version {latest}")
            try:
                table.load_as_version(version)
            except Exception:
                raise P.invalid(f"version {version} is no longer available") from None
        return table

    def commit_times(self, table) -> dict[int, int]:
        return {int(c["version"]): int(c["timestamp"]) for c in table.history() if "timestamp" in c}

    def version_at_or_before(self, table, ts_ms: int) -> int:
        at = [v for v, t in self.commit_times(table).items() if t <= ts_ms]
        if not at:
            raise P.invalid("the timestamp is before the table's earliest available version")
        return max(at)

    def version_at_or_after(self, table, ts_ms: int) -> int:
        at = [v for v, t in self.commit_times(table).items() if t >= ts_ms]
        if not at:
            raise P.invalid("the timestamp is after the table's latest version")
        return min(at)

    def location(self, spec: FeedSpec, tier: str) -> TierLocation:
        return tier_location(spec.tier_path(tier), share=spec.feed, tier=tier, signer=self.signer,
                             s3_client=self.s3_client, ttl_seconds=self.url_ttl_seconds)

    def s3_client(self):
        """One boto3 client for all requests (clients are thread-safe; making one costs ms)."""
        with self._s3_lock:
            if self._s3 is None:
                self._s3 = s3_client()
            return self._s3

    def commit_actions(self, where: TierLocation, version: int) -> list[dict[str, Any]]:
        try:
            text = where.commit_json(version)
        except Exception:
            raise P.invalid(f"the changes of version {version} are no longer available") from None
        return [json.loads(x) for x in text.splitlines() if x.strip()]


# -- the app ------------------------------------------------------------------------------------


async def _read_body(request: Request) -> bytes:
    """A POST body, refused past `P.MAX_BODY_BYTES` before it is all read."""
    declared = request.headers.get("content-length")
    if declared and (not declared.isdigit() or int(declared) > P.MAX_BODY_BYTES):
        raise ShareError(413, "MALFORMED_REQUEST", f"request body larger than {P.MAX_BODY_BYTES} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > P.MAX_BODY_BYTES:
            raise ShareError(413, "MALFORMED_REQUEST", f"request body larger than {P.MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _guarded(run: Callable[[Request], Any]):
    """An ASGI endpoint around ``run(request)`` (a coroutine): protocol errors become the
    protocol's error JSON; anything else a 500 with no detail (logged here, not sent)."""

    async def handler(request: Request) -> Response:
        try:
            return await run(request)
        except ShareError as exc:
            return _error(exc)
        except Exception:  # never a traceback or a path to the client
            log.exception("sharing: request failed")
            return _error(ShareError(500, "INTERNAL_ERROR", "internal error"))

    return handler


def build_app(server: SharingServer) -> Starlette:
    """The ASGI app. Endpoint bodies run in the thread pool (``deltalake`` and file reads block)."""

    def endpoint(fn):
        async def run(request: Request) -> Response:
            recipient = server.recipient(request)
            body = await _read_body(request) if request.method == "POST" else b""
            return await run_in_threadpool(fn, server, request, recipient, body)

        return _guarded(run)

    async def files(request: Request) -> Response:
        return await run_in_threadpool(serve_file, server, request)

    table_prefix = "/shares/{share}/schemas/{schema}/tables/{table}"
    routes = [
        Route("/shares", endpoint(E.list_shares), methods=["GET"]),
        Route("/shares/{share}", endpoint(E.get_share), methods=["GET"]),
        Route("/shares/{share}/schemas", endpoint(E.list_schemas), methods=["GET"]),
        Route("/shares/{share}/schemas/{schema}/tables", endpoint(E.list_tables), methods=["GET"]),
        Route("/shares/{share}/all-tables", endpoint(E.list_all_tables), methods=["GET"]),
        Route(table_prefix, endpoint(E.table_version), methods=["HEAD"]),
        Route(table_prefix + "/version", endpoint(E.table_version), methods=["GET", "HEAD"]),
        Route(table_prefix + "/metadata", endpoint(E.table_metadata), methods=["GET"]),
        Route(table_prefix + "/query", endpoint(E.query), methods=["POST"]),
        Route(table_prefix + "/changes", endpoint(E.changes), methods=["GET"]),
        Route("/files/{token}", _guarded(files), methods=["GET", "HEAD"], name=FILE_ROUTE),
    ]
    @asynccontextmanager
    async def lifespan(_app):
        yield
        await run_in_threadpool(server.access.close)  # what is queued reaches the table

    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_error}, lifespan=lifespan)
    return AccessLog(app, server.access, now_ms=server.now_ms)


async def _http_error(request: Request, exc: HTTPException) -> Response:
    """Starlette's own refusals (no route, wrong method) in the protocol's error shape."""
    if exc.status_code == 405:
        return _error(ShareError(405, "UNSUPPORTED_OPERATION", "method not allowed"))
    if exc.status_code == 404:
        return _error(ShareError(404, "RESOURCE_DOES_NOT_EXIST", "no such resource"))
    return _error(ShareError(exc.status_code if exc.status_code >= 400 else 400, "MALFORMED_REQUEST", "bad request"))


def _error(exc: ShareError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


class AccessLog:
    """ASGI middleware: one log line per HTTP request, with what the handler recorded."""

    def __init__(self, app, records: AccessRecords | None = None, *, now_ms: Callable[[], int] = _now_ms) -> None:
        self.app = app
        self.records = records
        self.now_ms = now_ms  # the server's clock: a record's time is the one its token was judged at

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, at_ms = time.perf_counter(), self.now_ms()
        info = scope.setdefault("wl_access", {})
        status = {"code": 500}

        async def sending(message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            path = info.get("path") or scope.get("path", "")[:200]
            fields = [f"recipient={info.get('recipient', '-')}", scope.get("method", "-"), path,
                      f"status={status['code']}"]
            for key in ("table", "version", "files", "rows", "refused"):
                if key in info:
                    fields.append(f"{key}={info[key]}" if key != "refused" else f"refused={info[key]!r}")
            ms = (time.perf_counter() - started) * 1000
            fields.append(f"ms={ms:.1f}")
            access_log.info(" ".join(fields))
            if self.records is not None:
                first, _, last = str(info.get("version", "")).partition("-")  # "start-end" for changes
                self.records.record({"at_s": at_ms / 1000, "recipient": info.get("recipient"),
                                     "token_id": info.get("token_id"),
                                     "method": scope.get("method"), "endpoint": path, "table": info.get("table"),
                                     "version": _int(last or first or None),
                                     "from_version": _int(first) if last else None, "files": _int(info.get("files")),
                                     "rows": _int(info.get("rows")), "status": status["code"], "ms": round(ms, 3),
                                     "refused": info.get("refused")})


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


# -- running ----------------------------------------------------------------------------------


def uvicorn_config(app, *, host: str, port: int, tls_cert: str | None = None, tls_key: str | None = None,
                   log_level: str = "warning") -> uvicorn.Config:
    return uvicorn.Config(app, host=host, port=port, ssl_certfile=tls_cert, ssl_keyfile=tls_key,
                          log_level=log_level, access_log=False, limit_concurrency=64,
                          h11_max_incomplete_event_size=16 * 1024)
