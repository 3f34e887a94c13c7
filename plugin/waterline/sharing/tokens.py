"""Recipients' bearer tokens: only SHA-256 hashes are stored, with expiry and revocation.

The store is one JSON document, by default ``<warehouse>/_wl_sharing/tokens.json``:
a file (mode 0600) for a local warehouse, an object in the bucket for an S3 one
(read and written with boto3, conditional PUTs so two `token create` runs cannot
lose each other's tokens). Feed names match ``[a-z]...``, so ``_wl_sharing`` is
never a feed's folder and the server never serves it. A token is shown once, when
it is created, inside the subscriber's profile file; the store keeps
``sha256(token)``, and `TokenStore.authenticate` compares hashes with
`hmac.compare_digest` over every entry, so the time it takes does not depend on
which entry (if any) matched.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import secrets
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from waterline.engine.delta import storage
from waterline.engine.delta.objects import conditional_put
from waterline.errors import WaterlineError
from waterline.sharing.entitlements import EntitlementTrail, trail_path
from waterline.spec import FeedSpec

TOKEN_PREFIX = "wlds_"
STORE_DIR = "_wl_sharing"
STORE_FILE = "tokens.json"


class TokenError(WaterlineError):
    """A token store problem (unreadable store, unknown recipient ...)."""


class AuthError(Exception):
    """A request's token is missing, malformed, unknown, expired or revoked (the reason is logged, not sent)."""


@dataclass(frozen=True)
class TokenRecord:
    """One issued token, as stored: never the token itself."""

    id: str
    recipient: str
    sha256: str
    created_ms: int
    expires_ms: int | None = None
    revoked_ms: int | None = None

    def active(self, now_ms: int) -> bool:
        return self.revoked_ms is None and (self.expires_ms is None or now_ms < self.expires_ms)

    def public(self) -> dict[str, Any]:
        """What `waterline share token list` shows (no hash)."""
        out = asdict(self)
        out.pop("sha256")
        return out


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def default_store_path(spec: FeedSpec) -> str | Path:
    """``<warehouse>/_wl_sharing/tokens.json``: a local path, or an ``s3a://`` URI for an S3 warehouse."""
    if isinstance(spec.warehouse, str):
        if not storage.is_s3(spec.warehouse):
            raise TokenError(f"{spec.origin}: warehouse {spec.warehouse}: no token store there; give --store PATH")
        return storage.join(spec.warehouse, STORE_DIR, STORE_FILE)
    return Path(spec.warehouse) / STORE_DIR / STORE_FILE


_UNCHANGED = object()


class _FileBackend:
    """The store as a local file, replaced atomically (write a temp file, rename)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path)

    def load(self, tag: Any) -> Any:
        """``(tag, body or None)``, or `_UNCHANGED` if the file's (mtime, size) is still ``tag``."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None, None
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp == tag:
            return _UNCHANGED
        return stamp, self.path.read_bytes()

    def save(self, body: bytes, tag: Any) -> bool:
        """Replace the file if it is still what was read as ``tag`` (False: another writer's
        change came first), compared and renamed under a `flock` of a side file, as the
        local lease does: two `token create` runs on one machine never lose a token."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(self.path.parent, 0o700)
        lock = os.open(self.path.parent / ".tokens.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                st = self.path.stat()
                current = (st.st_mtime_ns, st.st_size)
            except FileNotFoundError:
                current = None
            if current != tag:
                return False
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tokens-")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(body)
                os.chmod(tmp, 0o600)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            return True
        finally:
            os.close(lock)  # releases the flock


class _S3Backend:
    """The store as an object in the warehouse's bucket. Reads are conditional on the ETag
    (a 304 costs no body) and done at most once per ``refresh_s`` per process, so a revoke
    reaches a running server within that time; writes are conditional PUTs (``If-Match``,
    or ``If-None-Match: *`` for the first), retried on a lost race by `TokenStore`."""

    def __init__(self, uri: str, client: Any = None, refresh_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.bucket, self.key = storage.split_s3(uri)
        self.where = f"s3://{self.bucket}/{self.key}"
        self._client = client
        self.refresh_s = refresh_s
        self._clock = clock
        self._checked: float | None = None

    @property
    def client(self):
        if self._client is None:
            self._client = storage.s3_client()
        return self._client

    def load(self, tag: Any) -> Any:
        from botocore.exceptions import ClientError  # ~0.2 s to import, S3 stores only (as storage.s3_client)

        now = self._clock()
        if tag is not None and self._checked is not None and now - self._checked < self.refresh_s:
            return _UNCHANGED
        condition = {"IfNoneMatch": tag} if tag else {}
        try:
            out = self.client.get_object(Bucket=self.bucket, Key=self.key, **condition)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status == 304 or code in ("304", "NotModified"):
                self._checked = now
                return _UNCHANGED
            if code in ("NoSuchKey", "404"):
                self._checked = now
                return None, None
            raise
        self._checked = now
        return out["ETag"], out["Body"].read()

    def save(self, body: bytes, tag: Any) -> bool:
        # Idempotent: a PUT boto3 retried after its first try landed reads back as ours,
        # not as a lost race (which would apply the change twice: two tokens for one create).
        condition = {"IfMatch": tag} if tag else {"IfNoneMatch": "*"}
        if conditional_put(self.client, self.bucket, self.key, body, **condition) is None:
            return False  # another writer won: reload and apply again
        self._checked = None
        return True


class TokenStore:
    """The token store at ``path`` (a local file, or an ``s3a://``/``s3://`` object), re-read
    when it changes, so a revoke reaches a running server."""

    _WRITE_TRIES = 5

    def __init__(self, path: str | Path, *, s3_client: Any = None, refresh_s: float = 1.0) -> None:
        if storage.is_s3(str(path)):
            self._backend: _FileBackend | _S3Backend = _S3Backend(str(path), s3_client, refresh_s)
        else:
            folder = storage.local_folder(str(path))
            if folder is None:
                raise TokenError(f"token store {path}: only a local file or an s3:// object can hold it")
            self._backend = _FileBackend(Path(folder))
        self.where = self._backend.where
        self.trail = EntitlementTrail(trail_path(self.where))
        self._lock = threading.Lock()
        self._tag: Any = None
        self._records: list[TokenRecord] = []

    # -- reading ---------------------------------------------------------------------

    def records(self) -> list[TokenRecord]:
        with self._lock:
            self._reload()
            return list(self._records)

    def _reload(self) -> None:
        try:
            loaded = self._backend.load(self._tag)
            if loaded is _UNCHANGED:
                return
            tag, body = loaded
            data = json.loads(body) if body is not None else {}
            records = [TokenRecord(**r) for r in data.get("tokens", [])]
        except Exception as exc:  # OSError, bad JSON, or botocore's: no credentials, no bucket, endpoint down
            raise TokenError(f"token store {self.where}: unreadable ({type(exc).__name__})") from None
        self._tag, self._records = tag, records

    def authenticate(self, token: str | None, now_ms: int) -> str:
        """The recipient ``token`` belongs to; `AuthError` if it is not a live token."""
        return self.authenticate_record(token, now_ms).recipient

    def authenticate_record(self, token: str | None, now_ms: int) -> TokenRecord:
        """The stored record of ``token``; `AuthError` if it is not a live token."""
        if not token:
            raise AuthError("missing token")
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200 or not token.isascii():
            raise AuthError("malformed token")
        presented = token_hash(token)
        match: TokenRecord | None = None
        for record in self.records():  # every entry is compared: no early exit on a match
            if hmac.compare_digest(presented, record.sha256):
                match = record
        if match is None:
            raise AuthError("unknown token")
        if match.revoked_ms is not None:
            raise AuthError(f"revoked token {match.id} of {match.recipient}")
        if match.expires_ms is not None and now_ms >= match.expires_ms:
            raise AuthError(f"expired token {match.id} of {match.recipient}")
        return match

    # -- writing ---------------------------------------------------------------------

    def create(self, recipient: str, *, now_ms: int, expires_ms: int | None) -> tuple[str, TokenRecord]:
        """A new token for ``recipient``: the token text (shown once) and its stored record."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        record = TokenRecord(id=secrets.token_hex(4), recipient=recipient, sha256=token_hash(token),
                             created_ms=now_ms, expires_ms=expires_ms)
        # recorded first: a failure in between over-states what the recipient could read, never under-states
        self.trail.token_created(recipient, record.id, at_ms=now_ms, expires_ms=expires_ms)
        self._update(lambda records: (records + [record], True))
        return token, record

    def revoke(self, recipient: str, *, now_ms: int, token_id: str | None = None) -> list[TokenRecord]:
        """Revoke ``recipient``'s live tokens (or the one with ``token_id``); returns those revoked."""
        revoked: list[TokenRecord] = []

        def change(records: list[TokenRecord]) -> tuple[list[TokenRecord], bool]:
            revoked.clear()
            out = []
            for r in records:
                if r.recipient == recipient and r.revoked_ms is None and token_id in (None, r.id):
                    r = TokenRecord(**{**asdict(r), "revoked_ms": now_ms})
                    revoked.append(r)
                out.append(r)
            return out, bool(revoked)

        self._update(change)
        if revoked:  # recorded once the revocation holds (see create)
            self.trail.tokens_revoked([(r.recipient, r.id) for r in revoked], at_ms=now_ms)
        return list(revoked)

    def _update(self, change: Callable[[list[TokenRecord]], tuple[list[TokenRecord], bool]]) -> None:
        """Read, ``change``, write back; again on a lost race (S3), at most a few times."""
        with self._lock:
            for _ in range(self._WRITE_TRIES):
                self._tag = None  # always read the newest before writing
                self._reload()
                records, write = change(list(self._records))
                if not write:
                    return
                body = json.dumps({"version": 1, "tokens": [asdict(r) for r in records]}, indent=1, sort_keys=True)
                if self._backend.save(body.encode("utf-8"), self._tag):
                    self._tag, self._records = None, records
                    return
        raise TokenError(f"token store {self.where}: changed by others {self._WRITE_TRIES} times in a row; try again")


def profile(endpoint: str, token: str, expires_ms: int | None) -> dict[str, Any]:
    """The Delta Sharing profile file a subscriber gives its client."""
    out: dict[str, Any] = {"shareCredentialsVersion": 1, "endpoint": endpoint.rstrip("/"), "bearerToken": token}
    if expires_ms is not None:
        out["expirationTime"] = (
            datetime.fromtimestamp(expires_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        )
    return out
