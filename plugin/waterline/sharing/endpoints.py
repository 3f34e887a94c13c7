"""The Delta Sharing REST endpoints: listings, table version, metadata, query, changes.

Each is a plain function ``(server, request, recipient, body) -> Response`` run in the
thread pool (``deltalake`` and file reads block) by `waterline.sharing.server.build_app`,
which authenticates first. Everything a recipient can name is checked by
`SharingServer.table` (its audiences' tiers only) before any table is opened.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any, Iterable

import pyarrow as pa
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from waterline.sharing import protocol as P
from waterline.sharing.files import ROUTE as FILE_ROUTE
from waterline.sharing.protocol import ShareError
from waterline.spec import FeedSpec

if TYPE_CHECKING:  # the server imports this module
    from waterline.sharing.server import SharingServer

_CHANGE_FEED = "delta.enableChangeDataFeed"


def access(request: Request) -> dict[str, Any]:
    """What the access log line of this request will say (filled in by the handlers)."""
    return request.scope.setdefault("wl_access", {})


def share_id(text: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "waterline:" + text))


def change_feed(table) -> bool:
    return table.metadata().configuration.get(_CHANGE_FEED, "").lower() == "true"


def _metadata(table, tier: str, version: int | None = None) -> str:
    meta = table.metadata()
    return P.metadata_line(table_id=meta.id, name=tier, schema_string=table.schema().to_json(),
                           partition_columns=list(meta.partition_columns), change_feed=change_feed(table),
                           version=version)


def headers(version: int) -> dict[str, str]:
    return {P.VERSION_HEADER: str(version), P.CAPABILITIES: "responseformat=parquet"}


def _ndjson(lines: Iterable[str], version: int) -> Response:
    return Response("".join(lines), media_type=P.NDJSON, headers=headers(version))


def _check_readable(table) -> None:
    """Files with deletion vectors cannot be served as plain parquet URLs (waterline's tiers have none)."""
    features = table.protocol().reader_features or []
    if "deletionVectors" in features and table.metadata().configuration.get(
            "delta.enableDeletionVectors", "").lower() == "true":
        raise ShareError(400, "UNSUPPORTED_OPERATION", "this table uses deletion vectors, which this server "
                                                       "does not serve")


def _link(request: Request):
    return lambda token: str(request.url_for(FILE_ROUTE, token=token))


# -- listings ---------------------------------------------------------------------------------


def list_shares(server: SharingServer, request: Request, recipient: str, _body: bytes) -> Response:
    p = P.page(request.query_params, "shares")
    items = [{"name": feed, "id": share_id(feed)} for feed in server.shares_of(recipient)]
    return JSONResponse(P.paged(items, p, "shares"))


def get_share(server: SharingServer, request: Request, recipient: str, _body: bytes) -> Response:
    spec = server.share(recipient, request.path_params["share"])
    return JSONResponse({"share": {"name": spec.feed, "id": share_id(spec.feed)}})


def list_schemas(server: SharingServer, request: Request, recipient: str, _body: bytes) -> Response:
    spec = server.share(recipient, request.path_params["share"])
    p = P.page(request.query_params, "schemas")
    return JSONResponse(P.paged([{"name": P.SCHEMA, "share": spec.feed}], p, "schemas"))


def _tables(spec: FeedSpec, recipient: str) -> list[dict[str, Any]]:
    return [{"name": tier, "schema": P.SCHEMA, "share": spec.feed, "shareId": share_id(spec.feed),
             "id": share_id(f"{spec.feed}.{tier}")} for tier in spec.tiers if tier in spec.audiences.get(recipient, ())]


def list_tables(server: SharingServer, request: Request, recipient: str, _body: bytes) -> Response:
    spec = server.schema(recipient, request.path_params["share"], request.path_params["schema"])
    p = P.page(request.query_params, "tables")
    return JSONResponse(P.paged(_tables(spec, recipient), p, "tables"))


def list_all_tables(server: SharingServer, request: Request, recipient: str, _body: bytes) -> Response:
    spec = server.share(recipient, request.path_params["share"])
    p = P.page(request.query_params, "all-tables")
    return JSONResponse(P.paged(_tables(spec, recipient), p, "all-tables"))


# -- one table --------------------------------------------------------------------------------


def _table(server: SharingServer, request: Request, recipient: str) -> tuple[FeedSpec, str]:
    pp = request.path_params
    return server.table(request, recipient, pp["share"], pp["schema"], pp["table"])


def table_version(server: SharingServer, request: Request, recipient: str, _body: bytes) -> Response:
    spec, tier = _table(server, request, recipient)
    table = server.open(spec, tier)
    version = table.version()
    starting = request.query_params.get("startingTimestamp")
    if starting:
        version = server.version_at_or_after(table, P.timestamp_ms(starting, "startingTimestamp"))
    access(request)["version"] = version
    return Response(status_code=200, headers=headers(version))


def table_metadata(server: SharingServer, request: Request, recipient: str, _body: bytes) -> Response:
    spec, tier = _table(server, request, recipient)
    table = server.open(spec, tier)
    access(request)["version"] = table.version()
    return _ndjson([P.protocol_line(), _metadata(table, tier)], table.version())


def query(server: SharingServer, request: Request, recipient: str, body: bytes) -> Response:
    """A snapshot (or time travel to ``version`` / ``timestamp``): one table version answers
    the whole request, so a read never mixes the files of two releases."""
    spec, tier = _table(server, request, recipient)
    q = P.query_body(body)
    table = server.open(spec, tier)
    travel = q.version is not None or q.timestamp_ms is not None
    if q.timestamp_ms is not None:
        table = server.open(spec, tier, server.version_at_or_before(table, q.timestamp_ms))
    elif q.version is not None:
        table = server.open(spec, tier, q.version)
    _check_readable(table)
    version = table.version()
    stamp = server.commit_times(table).get(version) if travel else None
    adds = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    parts = list(table.metadata().partition_columns)
    where, link, now = server.location(spec, tier), _link(request), server.now_ms()
    lines = [P.protocol_line(), _metadata(table, tier, version if travel else None)]
    rows = 0
    for add in adds:
        url, expires = where.file_url(add["path"], recipient=recipient, now_ms=now, link=link)
        n = add.get("num_records")
        rows += n or 0
        entry: dict[str, Any] = {
            "url": url, "id": P.file_id(add["path"]), "size": int(add["size_bytes"]),
            "partitionValues": {c: add.get(f"partition.{c}") for c in parts},
            "expirationTimestamp": expires,
        }
        if n is not None:
            entry["stats"] = json.dumps({"numRecords": n})
        if travel:
            entry["version"], entry["timestamp"] = version, stamp
        lines.append(P.line({"file": entry}))
    access(request).update(version=version, files=len(adds), rows=rows)
    return _ndjson(lines, version)


def _change_range(server: SharingServer, table, params) -> tuple[int, int]:
    latest = table.version()
    if params.get("startingVersion") is not None:
        start = P.version_param(params["startingVersion"], "startingVersion")
    elif params.get("startingTimestamp"):
        start = server.version_at_or_after(table, P.timestamp_ms(params["startingTimestamp"], "startingTimestamp"))
    else:
        raise P.invalid("give startingVersion or startingTimestamp")
    if params.get("endingVersion") is not None:
        end = min(P.version_param(params["endingVersion"], "endingVersion"), latest)
    elif params.get("endingTimestamp"):
        end = server.version_at_or_before(table, P.timestamp_ms(params["endingTimestamp"], "endingTimestamp"))
    else:
        end = latest
    if start > latest:
        raise P.invalid(f"startingVersion {start} is after the table's latest version {latest}")
    if end < start:
        raise P.invalid("the ending version is before the starting version")
    if end - start + 1 > P.MAX_CHANGE_VERSIONS:
        raise P.invalid(f"at most {P.MAX_CHANGE_VERSIONS} versions per change query")
    return start, end


def changes(server: SharingServer, request: Request, recipient: str, _body: bytes) -> Response:
    """The change data feed of versions [start, end]: each version's ``cdc`` files, or, for a
    version that wrote none (inserts only, or removals of whole files), its data ``add`` and
    ``remove`` actions, as Delta's own change feed reader does."""
    spec, tier = _table(server, request, recipient)
    table = server.open(spec, tier)  # the latest version bounds the range, whatever commits meanwhile
    start, end = _change_range(server, table, request.query_params)
    if not change_feed(server.open(spec, tier, start)):
        raise P.invalid(f"the table has no change data feed at version {start}; start later")
    parts = list(table.metadata().partition_columns)
    where, link, now = server.location(spec, tier), _link(request), server.now_ms()
    lines = [P.protocol_line(), _metadata(table, tier)]
    files = 0
    for version in range(start, end + 1):
        actions = server.commit_actions(where, version)
        stamp = next((a["commitInfo"].get("timestamp") for a in actions if "commitInfo" in a), None)
        cdc = [a["cdc"] for a in actions if "cdc" in a]
        chosen = [("cdf", c) for c in cdc] if cdc else [
            (kind, a[kind]) for a in actions for kind in ("add", "remove")
            if kind in a and a[kind].get("dataChange", True)]
        for kind, action in chosen:
            url, expires = where.file_url(action["path"], recipient=recipient, now_ms=now, link=link)
            size = action.get("size")
            if size is None:
                size = where.size(action["path"])
            values = action.get("partitionValues") or {}
            lines.append(P.line({kind: {
                "url": url, "id": P.file_id(action["path"]), "size": int(size),
                "partitionValues": {c: values.get(c) for c in parts},
                "timestamp": stamp, "version": version, "expirationTimestamp": expires,
            }}))
            files += 1
    access(request).update(version=f"{start}-{end}", files=files)
    return _ndjson(lines, start)
