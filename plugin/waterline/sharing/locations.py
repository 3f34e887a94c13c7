"""Where a tier table's files are, and how a client is handed one: the storage-specific part.

* `LocalTier`: a folder; file URLs are signed by the server (`waterline.sharing.files`)
  and answered by its ``/files`` endpoint.
* `S3Tier`: an ``s3a://`` (or ``s3://``) prefix; file URLs are pre-signed S3 GET URLs
  (boto3, Signature Version 4, the warehouse's endpoint and keys from
  `waterline.engine.delta.storage`), so the bytes never pass through the server.

Both read the tier's commit files (``_delta_log/<version>.json``) for change queries, and
say whether a version's commit exists (how `waterline.sharing.tables` knows its snapshot
is still the latest).
Paths handed to them come from the tier table's own Delta log, never from a request.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Union
from urllib.parse import unquote

from waterline.engine.delta import storage
from waterline.sharing import protocol as P
from waterline.sharing.signing import FileSigner, resolve

#: Builds the absolute URL of ``/files/{token}`` for the request being answered.
Link = Callable[[str], str]


def _commit_name(version: int) -> str:
    return f"_delta_log/{version:020d}.json"


@dataclass(frozen=True)
class LocalTier:
    """A tier table in a local folder."""

    root: Path
    share: str
    tier: str
    signer: FileSigner

    def file_url(self, rel: str, *, recipient: str, now_ms: int, link: Link) -> tuple[str, int]:
        token, expires = self.signer.sign(recipient, self.share, self.tier, unquote(rel), now_ms)
        return link(token), expires

    def size(self, rel: str) -> int:
        return resolve(self.root, unquote(rel)).stat().st_size

    def commit_json(self, version: int) -> str:
        return (self.root / _commit_name(version)).read_text(encoding="utf-8")

    def has_commit(self, version: int) -> bool:
        return (self.root / _commit_name(version)).is_file()


@dataclass(frozen=True)
class S3Tier:
    """A tier table under an S3 prefix; ``client`` is a boto3 S3 client (thread-safe, shared)."""

    uri: str
    client: Any
    ttl_seconds: int

    def _object(self, rel: str) -> tuple[str, str]:
        return storage.split_s3(storage.join(self.uri, unquote(rel)))

    def file_url(self, rel: str, *, recipient: str, now_ms: int, link: Link) -> tuple[str, int]:
        bucket, key = self._object(rel)
        url = self.client.generate_presigned_url(
            "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=self.ttl_seconds)
        return url, now_ms + self.ttl_seconds * 1000

    def size(self, rel: str) -> int:
        bucket, key = self._object(rel)
        return int(self.client.head_object(Bucket=bucket, Key=key)["ContentLength"])

    def commit_json(self, version: int) -> str:
        bucket, key = self._object(_commit_name(version))
        return self.client.get_object(Bucket=bucket, Key=key)["Body"].read().decode("utf-8")

    def has_commit(self, version: int) -> bool:
        bucket, key = self._object(_commit_name(version))
        try:
            self.client.head_object(Bucket=bucket, Key=key)
        except self.client.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True


TierLocation = Union[LocalTier, S3Tier]


def s3_client(settings: storage.S3Settings | None = None):
    """The boto3 S3 client `S3Tier` pre-signs file URLs with: `storage.s3_client` with
    ``presign=True`` (Signature Version 4)."""
    return storage.s3_client(settings, presign=True)


def tier_location(path: str, *, share: str, tier: str, signer: FileSigner, s3_client: Callable[[], Any],
                  ttl_seconds: int) -> TierLocation:
    """The location of the tier table at ``path`` (built by `FeedSpec.tier_path`)."""
    if storage.is_s3(path):
        return S3Tier(uri=path, client=s3_client(), ttl_seconds=ttl_seconds)
    folder = storage.local_folder(path)
    if folder is None:  # another object store: deltalake may read it, but we cannot hand out its files
        raise P.ShareError(400, "UNSUPPORTED_OPERATION", "this table's storage is not served")
    return LocalTier(root=Path(folder), share=share, tier=tier, signer=signer)
