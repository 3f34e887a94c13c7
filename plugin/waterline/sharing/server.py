"""The sharing server as one handle: the feeds it serves (one share each), who may see what,
the tier tables, the file-URL signer, the access records and the clock.

One share per feed, one schema (``tiers``), and as tables the tiers the recipient's
audiences allow (spec key ``audiences``). Only paths built by `FeedSpec.tier_path`
for an allowed tier are ever opened: the held table, the quarantine, the lease and the
token store have no name here. Snapshots and time travel come from ``deltalake``
(`waterline.sharing.tables`, opened once per commit); change queries from the tier's
Delta change data feed (the commit files' ``cdc``/``add``/``remove`` actions). Files
reach clients through short-lived URLs (`waterline.sharing.locations`): signed by this
server (`waterline.sharing.signing`) for a local warehouse, pre-signed S3 URLs for an
S3 one.

Modules, each importing only those below it: `app` (routes, the access log middleware,
uvicorn) -> `endpoints` and `files` (thin request handlers) -> this handle -> `tables`,
`tokens`, `access_records` -> `locations` -> `signing` -> `protocol` (the pure parts).
See docs/sharing.md.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from starlette.requests import Request

from waterline.errors import WaterlineError
from waterline.sharing import protocol as P
from waterline.sharing.access_records import AccessRecords, access_path
from waterline.sharing.retired import RetiredTiers
from waterline.sharing.locations import s3_client
from waterline.sharing.signing import FileSigner
from waterline.sharing.tables import SharedTier, TierTables
from waterline.sharing.tokens import AuthError, TokenStore
from waterline.spec import FeedSpec

DEFAULT_URL_TTL = 15 * 60


def wall_ms() -> int:
    """The server's default clock (ms since the epoch)."""
    return int(time.time() * 1000)


def access(request: Request) -> dict[str, Any]:
    """What the access record of this request will say (filled in as the request is answered)."""
    return request.scope.setdefault("wl_access", {})


@dataclass
class SharingServer:
    """What the app serves: feeds (shares), the token store, the file-URL key and clock."""

    specs: list[FeedSpec]
    store: TokenStore
    url_ttl_seconds: int = DEFAULT_URL_TTL
    now_ms: Callable[[], int] = wall_ms
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
        self.tables = TierTables(self.signer, url_ttl_seconds=self.url_ttl_seconds, s3_client=self.s3_client)
        self.retired = RetiredTiers()

    # -- who sees what ----------------------------------------------------------------

    def recipient(self, request: Request) -> str:
        """The recipient a request's bearer token names; 401 (and a refused access record) if none."""
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        try:
            if scheme.lower() != "bearer":
                raise AuthError("missing token" if not header else "malformed authorization header")
            record = self.store.authenticate_record(token.strip(), self.now_ms())
        except AuthError as exc:
            access(request)["refused"] = str(exc)
            raise P.unauthenticated() from None
        access(request).update(recipient=record.recipient, token_id=record.id)
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

    def table(self, request: Request, recipient: str, share: str, schema: str, table: str) -> SharedTier:
        """The tier a table path names, if ``recipient``'s audiences include it; a tier the feed
        retired is refused with its own message (whatever this server's spec file still says)."""
        spec = self.schema(recipient, share, schema)
        tier = P.name(table, "table")
        self.retired.refuse(spec, tier)
        if tier not in spec.audiences.get(recipient, ()) or tier not in spec.tiers:
            raise P.not_found("table", tier)
        shared = self.tables.tier(spec, tier)
        access(request)["table"] = shared.qualified
        return shared

    def served_tiers(self, spec: FeedSpec, recipient: str) -> list[str]:
        """The tiers of ``spec`` shown to ``recipient``: in its audiences, not retired."""
        retired = self.retired.of(spec)
        return [t for t in spec.tiers if t in spec.audiences.get(recipient, ()) and t not in retired]

    def s3_client(self):
        """One boto3 client for all requests (clients are thread-safe; making one costs ms)."""
        with self._s3_lock:
            if self._s3 is None:
                self._s3 = s3_client()
            return self._s3
