"""``GET|HEAD /files/{token}``: the data files of a local warehouse, answered by the sharing
server itself for the signed URLs it hands out (`waterline.sharing.signing`).

An S3 warehouse never reaches this module: its files go out as pre-signed S3 URLs.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response

from waterline.engine.delta import storage
from waterline.sharing import protocol as P
from waterline.sharing.server import SharingServer, access
from waterline.sharing.signing import resolve


def serve_file(server: SharingServer, request: Request) -> Response:
    """``GET|HEAD /files/{token}``: the file a valid, unexpired token names (Range requests work).
    Needs no bearer token: the signed URL is the credential, as a pre-signed S3 URL is."""
    record = access(request)
    record["path"] = "/files/..."  # the signed token is not logged
    recipient, share, tier, rel = server.signer.verify(request.path_params["token"], server.now_ms())
    record.update(recipient=recipient, table=f"{share}.{P.SCHEMA}.{tier}", files=1)
    spec = server.feeds.get(share)
    if spec is None or tier not in spec.tiers or tier in server.retired.of(spec):
        raise P.not_found("file")
    folder = storage.local_folder(spec.tier_path(tier))
    if folder is None:  # the feed moved to an object store since the URL was signed
        raise P.not_found("file")
    return FileResponse(resolve(Path(folder), rel), media_type="application/octet-stream")
