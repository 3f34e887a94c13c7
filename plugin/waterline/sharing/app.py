"""The ASGI app of a sharing server (Starlette, served by uvicorn): routes, the access log
middleware, error shapes, and uvicorn's settings.

Routes map to the thin functions of `waterline.sharing.endpoints` and
`waterline.sharing.files`; each gets the `SharingServer` handle, which knows who may
see what and opens the tier tables. Every request leaves one access-log line (logger
``waterline.sharing.access``) and one record in the access log table beside the token
store (`waterline.sharing.access_records`).
"""

from __future__ import annotations

import logging
import sys
import time
from contextlib import asynccontextmanager
from typing import Any, Callable

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from waterline.sharing import endpoints as E
from waterline.sharing import protocol as P
from waterline.sharing.access_records import AccessRecords
from waterline.sharing.files import serve_file
from waterline.sharing.protocol import ShareError
from waterline.sharing.server import SharingServer, wall_ms
from waterline.sharing.signing import ROUTE as FILE_ROUTE

access_log = logging.getLogger("waterline.sharing.access")
log = logging.getLogger("waterline.sharing")


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


def build_app(server: SharingServer, *, record_access: bool = True) -> Starlette:
    """The ASGI app. Endpoint bodies run in the thread pool (``deltalake`` and file reads block).
    ``record_access=False`` leaves the access log table alone (log lines only): for measuring
    what the records cost (`bench.sharing --compare-access-records`), never for serving."""

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
    return AccessLog(app, server.access if record_access else None, now_ms=server.now_ms)


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

    def __init__(self, app, records: AccessRecords | None = None, *, now_ms: Callable[[], int] = wall_ms) -> None:
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


def run(server: SharingServer, *, host: str, port: int, tls_cert: str | None = None, tls_key: str | None = None,
        record_access: bool = True) -> None:
    """Serve ``server`` until interrupted (what `waterline share serve` runs): one access log
    line per request on stderr, the access records to their table (``record_access``, see
    `build_app`)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    access_log.addHandler(handler)
    access_log.setLevel(logging.INFO)
    app = build_app(server, record_access=record_access)
    uvicorn.Server(uvicorn_config(app, host=host, port=port, tls_cert=tls_cert, tls_key=tls_key)).run()
