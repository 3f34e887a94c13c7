"""The Delta Sharing REST endpoints: listings, table version, metadata, query, changes.

Each is a plain function ``(server, request, recipient, body) -> Response`` run in the
thread pool (``deltalake`` and file reads block) by `waterline.sharing.app.build_app`,
which authenticates first. Everything a recipient can name is checked by
`SharingServer.table` (its audiences' tiers only), which hands back the `SharedTier`
that opens the table: these functions only shape the answers.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Callable, Iterable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from waterline.engine.delta.actions import AddFile, CdcFile, CommitInfo, FileAction, RemoveFile
from waterline.sharing import delta_format as D
from waterline.sharing import protocol as P
from waterline.sharing.protocol import ShareError
from waterline.sharing.server import SharingServer, access
from waterline.sharing.signing import PRESIGNED_QUERY
from waterline.sharing.signing import ROUTE as FILE_ROUTE
from waterline.sharing.tables import SharedTier, TierSnapshot
from waterline.spec import FeedSpec


def share_id(text: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "waterline:" + text))


def _metadata(table: TierSnapshot, tier: str, version: int | None = None) -> str:
    meta = table.metadata()
    return P.metadata_line(table_id=meta.id, name=tier, schema_string=meta.schema_string,
                           partition_columns=list(meta.partition_columns), change_feed=table.change_feed(),
                           version=version)


def headers(version: int, fmt: str = D.PARQUET) -> dict[str, str]:
    return {P.VERSION_HEADER: str(version), P.CAPABILITIES: f"responseformat={fmt}"}


def _ndjson(lines: Iterable[str], version: int, fmt: str = D.PARQUET) -> Response:
    return Response("".join(lines), media_type=P.NDJSON, headers=headers(version, fmt))


def _format(request: Request) -> str:
    """``delta`` when the client asked for the Delta format only, else ``parquet``."""
    return D.response_format(request.headers.get(P.CAPABILITIES))


def _head(table: TierSnapshot, tier: str, fmt: str, version: int | None = None) -> list[str]:
    """The protocol and metadata lines of an answer in ``fmt``."""
    if fmt == D.DELTA:
        return [D.protocol_line(table.protocol()),
                D.metadata_line(table.metadata(), change_feed=table.change_feed(), version=version)]
    return [P.protocol_line(), _metadata(table, tier, version)]


def _check_readable(table: TierSnapshot) -> None:
    """Files with deletion vectors cannot be served as plain parquet URLs (waterline's tiers have none)."""
    features = table.protocol().reader_features or []
    if "deletionVectors" in features and table.metadata().configuration.get(
            "delta.enableDeletionVectors", "").lower() == "true":
        raise ShareError(400, "UNSUPPORTED_OPERATION", "this table uses deletion vectors, which this server "
                                                       "does not serve")


def _link(request: Request):
    """The absolute URL of ``/files/{token}``, shaped as a pre-signed URL (`signing.PRESIGNED_QUERY`)."""
    return lambda token: f"{request.url_for(FILE_ROUTE, token=token)}?{PRESIGNED_QUERY}"


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


def _tables(server: SharingServer, spec: FeedSpec, recipient: str) -> list[dict[str, Any]]:
    return [{"name": tier, "schema": P.SCHEMA, "share": spec.feed, "shareId": share_id(spec.feed),
             "id": share_id(f"{spec.feed}.{tier}")} for tier in server.served_tiers(spec, recipient)]


def list_tables(server: SharingServer, request: Request, recipient: str, _body: bytes) -> Response:
    spec = server.schema(recipient, request.path_params["share"], request.path_params["schema"])
    p = P.page(request.query_params, "tables")
    return JSONResponse(P.paged(_tables(server, spec, recipient), p, "tables"))


def list_all_tables(server: SharingServer, request: Request, recipient: str, _body: bytes) -> Response:
    spec = server.share(recipient, request.path_params["share"])
    p = P.page(request.query_params, "all-tables")
    return JSONResponse(P.paged(_tables(server, spec, recipient), p, "all-tables"))


# -- one table --------------------------------------------------------------------------------


def _tier(server: SharingServer, request: Request, recipient: str) -> SharedTier:
    pp = request.path_params
    return server.table(request, recipient, pp["share"], pp["schema"], pp["table"])


def table_version(server: SharingServer, request: Request, recipient: str, _body: bytes) -> Response:
    tier = _tier(server, request, recipient)
    table = tier.latest()
    version = table.version()
    starting = request.query_params.get("startingTimestamp")
    if starting:
        version = tier.version_at_or_after(table, P.timestamp_ms(starting, "startingTimestamp"))
    access(request)["version"] = version
    return Response(status_code=200, headers=headers(version))


def table_metadata(server: SharingServer, request: Request, recipient: str, _body: bytes) -> Response:
    tier = _tier(server, request, recipient)
    table = tier.latest()
    access(request)["version"] = table.version()
    fmt = _format(request)
    return _ndjson(_head(table, tier.name, fmt), table.version(), fmt)


def query(server: SharingServer, request: Request, recipient: str, body: bytes) -> Response:
    """A snapshot (or time travel to ``version`` / ``timestamp``): one table version answers
    the whole request, so a read never mixes the files of two releases."""
    tier = _tier(server, request, recipient)
    q = P.query_body(body)
    table = tier.latest()
    travel = q.version is not None or q.timestamp_ms is not None
    if q.timestamp_ms is not None:
        table = tier.at(tier.version_at_or_before(table, q.timestamp_ms), table)
    elif q.version is not None:
        table = tier.at(q.version, table)
    _check_readable(table)
    version = table.version()
    stamp = tier.commit_times(table).get(version) if travel else None
    adds = table.add_files()
    parts = list(table.metadata().partition_columns)
    link, now = _link(request), server.now_ms()
    fmt = _format(request)
    lines = _head(table, tier.name, fmt, version if travel else None)
    rows = 0
    for add in adds:
        url, expires = tier.where.file_url(add.path, recipient=recipient, now_ms=now, link=link)
        n = add.num_records
        rows += n or 0
        if fmt == D.DELTA:
            lines.append(D.file_line(add, D.add_action(add, parts), url=url, expires=expires,
                                     version=version if travel else None, timestamp=stamp))
            continue
        entry: dict[str, Any] = {
            "url": url, "id": P.file_id(add.path), "size": add.size,
            "partitionValues": D.partition_values(add, parts), "expirationTimestamp": expires,
        }
        if n is not None:
            entry["stats"] = json.dumps({"numRecords": n})
        if travel:
            entry["version"], entry["timestamp"] = version, stamp
        lines.append(P.line({"file": entry}))
    access(request).update(version=version, files=len(adds), rows=rows)
    return _ndjson(lines, version, fmt)


def _change_range(tier: SharedTier, table: TierSnapshot, params) -> tuple[int, int]:
    latest = table.version()
    if params.get("startingVersion") is not None:
        start = P.version_param(params["startingVersion"], "startingVersion")
    elif params.get("startingTimestamp"):
        start = tier.version_at_or_after(table, P.timestamp_ms(params["startingTimestamp"], "startingTimestamp"))
    else:
        raise P.invalid("give startingVersion or startingTimestamp")
    if params.get("endingVersion") is not None:
        end = min(P.version_param(params["endingVersion"], "endingVersion"), latest)
    elif params.get("endingTimestamp"):
        end = tier.version_at_or_before(table, P.timestamp_ms(params["endingTimestamp"], "endingTimestamp"))
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
    tier = _tier(server, request, recipient)
    table = tier.latest()  # the latest version bounds the range, whatever commits meanwhile
    start, end = _change_range(tier, table, request.query_params)
    if not tier.at(start, table).change_feed():
        raise P.invalid(f"the table has no change data feed at version {start}; start later")
    parts = list(table.metadata().partition_columns)
    link, now = _link(request), server.now_ms()
    fmt = _format(request)
    # the Delta format names the first version's metadata; a kernel reader rebuilds the log from it
    lines = _head(table, tier.name, fmt, start if fmt == D.DELTA else None)

    def url_of(path: str) -> tuple[str, int]:
        return tier.where.file_url(path, recipient=recipient, now_ms=now, link=link)

    files = 0
    for version in range(start, end + 1):
        changed = _version_lines(tier, version, fmt, parts, url_of)
        lines += changed
        files += len(changed)
    access(request).update(version=f"{start}-{end}", files=files)
    return _ndjson(lines, start, fmt)


def _chosen(actions: list, fmt: str) -> list[tuple[str, FileAction]]:
    """The file actions of one commit a change query answers with, and their kind on the wire:
    in the Delta format every one (the reader chooses, as it would reading the log); in
    parquet the ``cdc`` files, or, for a version that wrote none, its data ``add`` and
    ``remove`` actions, as Delta's own change feed reader does."""
    named: list[FileAction] = [a for a in actions if isinstance(a, (AddFile, RemoveFile, CdcFile))]
    if fmt == D.DELTA:
        return [(D.KIND[type(a)], a) for a in named if isinstance(a, CdcFile) or a.data_change]
    cdc = [("cdf", a) for a in named if isinstance(a, CdcFile)]
    return cdc or [(D.KIND[type(a)], a) for a in named if not isinstance(a, CdcFile) and a.data_change]


def _version_lines(tier: SharedTier, version: int, fmt: str, parts: list[str],
                   url_of: Callable[[str], tuple[str, int]]) -> list[str]:
    """The lines of one version of a change query, one per chosen file action (``url_of``: a
    file's signed URL and its expiry)."""
    actions = tier.commit_actions(version)
    stamp = next((a.timestamp for a in actions if isinstance(a, CommitInfo)), None)
    out: list[str] = []
    for kind, action in _chosen(actions, fmt):
        url, expires = url_of(action.path)
        size = action.size if action.size is not None else tier.where.size(action.path)
        if fmt == D.DELTA:
            out.append(D.file_line(action, D.log_action(action, parts, int(size)), url=url, expires=expires,
                                   version=version, timestamp=stamp))
            continue
        out.append(P.line({kind: {
            "url": url, "id": P.file_id(action.path), "size": int(size),
            "partitionValues": D.partition_values(action, parts),
            "timestamp": stamp, "version": version, "expirationTimestamp": expires,
        }}))
    return out
