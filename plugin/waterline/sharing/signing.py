"""Signed, short-lived URLs for the data files of a local warehouse (``/files/<payload>.<mac>``).

An S3 warehouse never needs them: its files go out as pre-signed S3 URLs
(`waterline.sharing.locations`). Here, a URL names the table by (share, tier) and
the file by its path relative to the tier table; the MAC covers both and the expiry,
so a URL cannot be altered, widened to another file or extended. `resolve` opens a
file only inside that tier table's folder and outside its ``_delta_log``; the
endpoint that answers the URLs is `waterline.sharing.files`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from pathlib import Path

from waterline.sharing import protocol as P
from waterline.sharing.protocol import ShareError

#: The route name `request.url_for` builds file URLs with.
ROUTE = "file"
#: The longest token a file URL may carry (payload and MAC).
MAX_TOKEN = 4096
#: The query every file URL carries (``/files/<token>?sp=r``, "signed permission: read"; the
#: endpoint ignores it). delta-kernel's default engine, which the official client's
#: ``use_delta_format=True`` reads with, fetches a file over HTTP only when its URL is http(s)
#: and looks pre-signed, i.e. has a query key among ``X-Amz-Signature``, ``sp``,
#: ``X-Goog-Credential``, ``X-OSS-Credential`` (``X-Databricks-Signature`` since 0.22); any
#: other URL it reads from the object store of its local temporary table, by the URL's path
#: alone ("Object at location /files/... not found"). ``sp`` is in the list of every kernel since 0.9.
PRESIGNED_QUERY = "sp=r"


class FileSigner:
    """Signs and checks file URL tokens with HMAC-SHA256 and a key that lives only in the
    server's memory (a restart invalidates every URL handed out: clients query again)."""

    def __init__(self, key: bytes, ttl_seconds: int) -> None:
        self._key = key
        self.ttl_ms = ttl_seconds * 1000

    def sign(self, recipient: str, share: str, table: str, rel_path: str, now_ms: int) -> tuple[str, int]:
        """A token for one file of one tier, and the instant (ms) it stops serving."""
        expires = now_ms + self.ttl_ms
        payload = json.dumps([recipient, share, table, rel_path, expires], separators=(",", ":")).encode()
        text = base64.urlsafe_b64encode(payload).decode().rstrip("=")
        return f"{text}.{self._mac(text)}", expires

    def verify(self, token: str, now_ms: int) -> tuple[str, str, str, str]:
        """(recipient, share, table, relative path) of a valid, unexpired token; `ShareError` otherwise."""
        text, _, mac = token.partition(".")
        if len(token) > MAX_TOKEN or not mac or not text.isascii() or not hmac.compare_digest(mac, self._mac(text)):
            raise ShareError(403, "PERMISSION_DENIED", "invalid file URL")
        recipient, share, table, rel_path, expires = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        if now_ms >= int(expires):
            raise ShareError(403, "PERMISSION_DENIED", "file URL expired; query the table again")
        return recipient, share, table, rel_path

    def _mac(self, text: str) -> str:
        return hmac.new(self._key, text.encode("ascii"), hashlib.sha256).hexdigest()


def resolve(root: Path, rel: str) -> Path:
    """The data file ``rel`` inside the table folder ``root``: never outside it, never in its
    ``_delta_log``, and only an existing file (else "does not exist", with no path)."""
    root = root.resolve()
    target = (root / rel).resolve()
    if not target.is_relative_to(root) or "_delta_log" in target.relative_to(root).parts or not target.is_file():
        raise P.not_found("file")
    return target
