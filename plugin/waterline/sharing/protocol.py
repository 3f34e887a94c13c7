"""The Delta Sharing protocol's pure parts: names, errors, pages, time, bodies, NDJSON lines.

No I/O here (the server in `waterline.sharing.server` does that; signed file URLs are
in `waterline.sharing.files`). Errors are `ShareError`s carrying the HTTP status and
the protocol's ``errorCode``; their messages never hold a path, a count or an instant
of anything not released.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping

#: The one schema of every share: a share is a feed, its tables are the feed's tiers.
SCHEMA = "tiers"
#: Page sizes: the default when the client sends none, and the most one page holds.
DEFAULT_PAGE = 100
MAX_PAGE = 1000
#: The most bytes a request body (POST .../query) may have.
MAX_BODY_BYTES = 64 * 1024
#: The most table versions one change query may span.
MAX_CHANGE_VERSIONS = 10_000
#: The addresses `waterline share serve` binds to without TLS.
LOOPBACK = ("127.0.0.1", "::1", "localhost")
NDJSON = "application/x-ndjson; charset=utf-8"
CAPABILITIES = "delta-sharing-capabilities"
VERSION_HEADER = "delta-table-version"
# The names waterline itself produces (feeds, tiers, the schema); everything else is unknown.
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}\Z")
_QUERY_KEYS = {"predicateHints", "jsonPredicateHints", "limitHint", "version", "timestamp",
               "startingVersion", "endingVersion", "includeHistoricalProtocol", "idempotencyKey"}


class ShareError(Exception):
    """A refused request: HTTP ``status``, protocol ``code``, one-line ``message`` (no paths)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message

    def body(self) -> dict[str, str]:
        return {"errorCode": self.code, "message": self.message}


def unauthenticated() -> ShareError:
    return ShareError(401, "UNAUTHENTICATED", "missing, invalid, expired or revoked bearer token")


def not_found(kind: str, name: str | None = None) -> ShareError:
    shown = f" {name}" if name is not None and _NAME.match(name) else ""
    return ShareError(404, "RESOURCE_DOES_NOT_EXIST", f"{kind}{shown} does not exist or is not shared with you")


def retired(tier: str, version: int) -> ShareError:
    """A tier the feed retired (spec version ``version`` no longer names it): not served."""
    return ShareError(404, "RESOURCE_DOES_NOT_EXIST",
                      f"table {tier} was retired by the feed's spec version {version}: it is no longer served")


def invalid(message: str) -> ShareError:
    return ShareError(400, "INVALID_PARAMETER_VALUE", message)


def name(value: str, kind: str) -> str:
    """A share, schema or table name from a URL: case-insensitive; anything not shaped like a
    waterline name (traversal, quoting, injection ...) is simply a thing that does not exist."""
    lowered = value.lower()
    if not _NAME.match(lowered):
        raise not_found(kind)
    return lowered


def check_bind(host: str, *, tls: bool, insecure: bool) -> None:
    """Loopback by default; any other address needs TLS (cert and key) or an explicit --insecure."""
    if host not in LOOPBACK and not tls and not insecure:
        raise ShareError(0, "", f"refusing to serve on {host} without TLS: give --tls-cert and --tls-key, "
                                "or --insecure behind a TLS proxy")


# -- pages ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    offset: int
    size: int


def page(params: Mapping[str, str], listing: str) -> Page:
    """``maxResults`` and ``pageToken`` of a list request (the token is bound to the listing)."""
    raw = params.get("maxResults")
    size = DEFAULT_PAGE
    if raw is not None:
        if not re.fullmatch(r"\d{1,9}", raw):
            raise invalid("maxResults must be a non-negative integer")
        size = min(int(raw), MAX_PAGE)
    offset = 0
    token = params.get("pageToken")
    if token:
        try:
            text = base64.urlsafe_b64decode(token.encode("ascii") + b"==").decode("ascii")
            kind, _, number = text.partition(":")
            offset = int(number)
            if kind != listing or offset < 0 or len(token) > 64:
                raise ValueError
        except (ValueError, UnicodeError):
            raise invalid("pageToken is not a token this server issued for this listing") from None
    return Page(offset=offset, size=size)


def paged(items: list[dict[str, Any]], p: Page, listing: str) -> dict[str, Any]:
    chunk = items[p.offset:p.offset + p.size]
    out: dict[str, Any] = {"items": chunk}
    if p.offset + p.size < len(items):
        token = base64.urlsafe_b64encode(f"{listing}:{p.offset + p.size}".encode()).decode().rstrip("=")
        out["nextPageToken"] = token
    return out


# -- time and versions --------------------------------------------------------------------


def timestamp_ms(text: str, what: str) -> int:
    """An ISO-8601 instant (``2026-01-01T00:00:00Z``; no zone means UTC) in ms since the epoch."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        raise invalid(f"{what} must be an ISO-8601 timestamp such as 2026-01-01T00:00:00Z") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return int(value.timestamp() * 1000)


def version_param(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise invalid(f"{what} must be a non-negative integer")
    if isinstance(value, str):
        if not re.fullmatch(r"\d{1,18}", value):
            raise invalid(f"{what} must be a non-negative integer")
        value = int(value)
    if value < 0:
        raise invalid(f"{what} must be a non-negative integer")
    return value


@dataclass(frozen=True)
class QueryRequest:
    version: int | None = None
    timestamp_ms: int | None = None
    limit_hint: int | None = None


def query_body(raw: bytes) -> QueryRequest:
    """The body of ``POST .../query``: ``version`` or ``timestamp`` time travel; hints are ignored
    (they are best effort by the protocol); streaming reads (``startingVersion``) are not served."""
    if len(raw) > MAX_BODY_BYTES:
        raise ShareError(413, "MALFORMED_REQUEST", f"request body larger than {MAX_BODY_BYTES} bytes")
    if not raw.strip():
        return QueryRequest()
    try:
        body = json.loads(raw)
    except ValueError:
        raise ShareError(400, "MALFORMED_REQUEST", "request body is not JSON") from None
    if not isinstance(body, dict):
        raise ShareError(400, "MALFORMED_REQUEST", "request body must be a JSON object")
    unknown = sorted(k for k in body if k not in _QUERY_KEYS)
    if unknown:
        raise invalid("unknown request field " + ", ".join(repr(k)[:40] for k in unknown[:3]))
    if body.get("startingVersion") is not None:
        raise ShareError(400, "UNSUPPORTED_OPERATION", "streaming queries (startingVersion) are not supported; "
                                                       "use the changes API")
    version = body.get("version")
    timestamp = body.get("timestamp")
    if version is not None and timestamp is not None:
        raise invalid("give at most one of version and timestamp")
    limit = body.get("limitHint")
    return QueryRequest(
        version=None if version is None else version_param(version, "version"),
        timestamp_ms=None if timestamp is None else timestamp_ms(str(timestamp), "timestamp"),
        limit_hint=None if limit is None else version_param(limit, "limitHint"),
    )


# -- NDJSON lines ---------------------------------------------------------------------------


def line(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":")) + "\n"


def protocol_line() -> str:
    return line({"protocol": {"minReaderVersion": 1}})


def metadata_line(*, table_id: str, name: str, schema_string: str, partition_columns: list[str],
                  change_feed: bool, version: int | None = None) -> str:
    """The table's metadata. Its configuration is *not* copied: the tier table's properties hold
    waterline's state (next due instant, pending counts), which are not the recipient's business."""
    meta: dict[str, Any] = {
        "id": table_id, "name": name, "format": {"provider": "parquet"}, "schemaString": schema_string,
        "partitionColumns": partition_columns,
        "configuration": {"enableChangeDataFeed": "true" if change_feed else "false"},
    }
    if version is not None:
        meta["version"] = version
    return line({"metaData": meta})


def file_id(path: str) -> str:
    return hashlib.md5(path.encode("utf-8")).hexdigest()  # noqa: S324  (an id, not a secret)
