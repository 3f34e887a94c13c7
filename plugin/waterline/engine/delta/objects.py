"""Whole objects in a warehouse, local or S3, without a JVM: create-if-absent, list, read, delete.

Delta commits, the feed lease and the sharing token store rest on one atomic
step, "create this object only if absent" (``If-None-Match: *`` on S3, a hard
link locally), and the lease and token store on "replace only if unchanged"
(``If-Match``). Both are made **idempotent** here: a write whose answer says
"already there" or "changed since" (412), or whose answer never came (a
timeout, a reset, a 5xx after boto3's own retries), reads the object back and
compares it with the bytes it wrote. The same bytes mean this write (or an
earlier try of it that boto3 retried) landed: success. Every body written here
is unique (a commit carries its attempt's id, a lease body its token), so no
other writer can have written the same bytes. Only a different object means
another writer won. Without that read, a retried PUT that had landed would read
as a lost race, and the caller would delete the files its own commit names.

A store that ignores ``If-None-Match`` would let two writers of one Delta
version both "win"; `check_conditional_writes` probes each S3 store once per
process before the first conditional create, and refuses one that does not
honour it.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from waterline.engine.delta import storage
from waterline.engine.delta.storage import S3Settings, s3_client, split_s3
from waterline.errors import OutcomeUnknown, WaterlineError

log = logging.getLogger(__name__)

#: Tries of one conditional write whose outcome stays unknown, and of a read-back.
WRITE_TRIES = 4
_BACKOFF_S = 0.2


@dataclass(frozen=True)
class StoredObject:
    """An object under a folder: its path relative to the folder, when it was last written, its size."""

    relative: str
    modified_s: float
    size: int = 0


def _local(uri: str) -> Path:
    folder = storage.local_folder(uri)
    if folder is None:
        raise WaterlineError(f"{uri}: not a local path or an S3 URI")
    return folder


def create_if_absent(uri: str, body: bytes) -> bool:
    """Write ``body`` at ``uri`` unless an object is there already: True if the object now
    holds ``body`` (this call, or an earlier try of it, wrote it), False if another writer's
    object is there. Raises `OutcomeUnknown` when the store cannot tell.

    Locally a fully written temporary file is hard-linked to the name (atomic, fails if
    the name exists); on S3 a PutObject with ``If-None-Match: *``.
    """
    if storage.is_s3(uri):
        bucket, key = split_s3(uri)
        return conditional_put(s3_client(), bucket, key, body, IfNoneMatch="*") is not None
    path = _local(uri)
    tmp = synced_temp(path, body)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return path.read_bytes() == body
    finally:
        tmp.unlink()
    return True


def synced_temp(path: Path, body: bytes) -> Path:
    """``body`` in a new temporary file beside ``path``, flushed to disk: ready to be linked
    or renamed to ``path`` in one atomic step."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(body)
        fh.flush()
        os.fsync(fh.fileno())
    return tmp


def conditional_put(client: Any, bucket: str, key: str, body: bytes, **condition: str) -> str | None:
    """PutObject with one condition (``IfNoneMatch="*"`` or ``IfMatch=etag``), idempotent: the
    object's ETag when it now holds ``body``, or None when another writer's object is there
    (or, for ``IfMatch``, replaced the one expected). Raises `OutcomeUnknown` when neither the
    write nor a read-back gets an answer after `WRITE_TRIES` tries."""
    from botocore.exceptions import BotoCoreError, ClientError  # loaded with the client: S3 warehouses only

    if "IfNoneMatch" in condition:
        check_conditional_writes(client, bucket, key)
    failure: BaseException | None = None
    for attempt in range(WRITE_TRIES):
        if attempt:
            time.sleep(_BACKOFF_S * attempt)
        try:
            return client.put_object(Bucket=bucket, Key=key, Body=body, **condition)["ETag"]
        except ClientError as exc:
            status, code = _status(exc)
            if status == 412 or code == "PreconditionFailed":  # maybe our own earlier try, retried by boto3
                return _settled(client, bucket, key, body, condition, unknown=False)
            if status == 409 or code == "ConditionalRequestConflict":  # a concurrent conditional write: again
                failure = exc
                continue
            if status is None or status < 500:
                raise
            failure = exc
        except BotoCoreError as exc:  # timeouts, resets, closed connections (after boto3's retries)
            failure = exc
        log.info("s3://%s/%s: conditional write outcome unknown (%s); reading it back", bucket, key, failure)
        etag = _settled(client, bucket, key, body, condition, unknown=True)
        if etag is not _AGAIN:
            return etag
    raise OutcomeUnknown(f"s3://{bucket}/{key}: the store did not confirm a write after {WRITE_TRIES} tries "
                         f"({failure}); nothing of it is assumed: run it again")


_AGAIN: Any = object()


def _settled(client: Any, bucket: str, key: str, body: bytes, condition: dict[str, str], *,
             unknown: bool) -> Any:
    """After a refused (``unknown`` False) or unanswered write: the ETag if the object holds
    ``body``, None if another writer's object is there, `_AGAIN` if the write did not land
    and may be tried again (only when ``unknown``)."""
    found = read_object_s3(client, bucket, key)
    if found is not None and found[0] == body:
        return found[1]
    if not unknown:
        return None
    if found is None:
        return _AGAIN if "IfNoneMatch" in condition else None
    if condition.get("IfMatch") == found[1]:  # still the object the replace expects: it did not land
        return _AGAIN
    return None


def read_object(uri: str) -> bytes | None:
    """The whole object at ``uri``, or None if there is none."""
    if storage.is_s3(uri):
        bucket, key = split_s3(uri)
        found = read_object_s3(s3_client(), bucket, key)
        return None if found is None else found[0]
    try:
        return _local(uri).read_bytes()
    except FileNotFoundError:
        return None


def read_object_s3(client: Any, bucket: str, key: str) -> tuple[bytes, str] | None:
    """``(body, etag)`` of an S3 object, or None if there is none; a read that keeps failing
    raises `OutcomeUnknown` (a caller that needed it to judge a write must not guess)."""
    from botocore.exceptions import BotoCoreError, ClientError

    failure: BaseException | None = None
    for attempt in range(WRITE_TRIES):
        if attempt:
            time.sleep(_BACKOFF_S * attempt)
        try:
            out = client.get_object(Bucket=bucket, Key=key)
            return out["Body"].read(), out["ETag"]
        except ClientError as exc:
            status, code = _status(exc)
            if status == 404 or code in ("NoSuchKey", "404"):
                return None
            if status is None or status < 500:
                raise
            failure = exc
        except BotoCoreError as exc:
            failure = exc
    raise OutcomeUnknown(f"s3://{bucket}/{key}: could not be read after {WRITE_TRIES} tries ({failure})")


def _status(exc: Any) -> tuple[int | None, str]:
    response = getattr(exc, "response", {}) or {}
    return response.get("ResponseMetadata", {}).get("HTTPStatusCode"), str(response.get("Error", {}).get("Code", ""))


# -- the one-time probe of a store's conditional writes ---------------------------------

_probed: set[tuple[Any, ...]] = set()
_probe_lock = threading.Lock()


def check_conditional_writes(client: Any, bucket: str, key: str) -> None:
    """Refuse (one line) an S3 store that does not honour ``If-None-Match: *`` on PutObject:
    a second conditional create of one probe object must fail. Probed once per store,
    bucket and process, beside ``key`` (a name readers ignore), and the probe deleted."""
    settings = S3Settings.from_env()
    scope = (client.meta.endpoint_url, bucket)
    if scope in _probed:
        return
    with _probe_lock:
        if scope in _probed:
            return
        folder = key.rpartition("/")[0]
        probe = f"{folder}/.wl-probe-{uuid.uuid4().hex}" if folder else f".wl-probe-{uuid.uuid4().hex}"
        honoured = _probe(client, bucket, probe)
        if not honoured:
            where = settings.endpoint or client.meta.endpoint_url
            raise WaterlineError(
                f"S3 store {where} (AWS_ENDPOINT_URL) bucket {bucket} does not honour `If-None-Match: *` on "
                "PutObject: a second conditional create of one object succeeded. waterline's Delta commits, "
                "feed lease and token store need conditional writes (AWS S3, MinIO, Cloudflare R2, "
                "s3proxy 4.1+); point AWS_ENDPOINT_URL at such a store"
            )
        _probed.add(scope)


def _probe(client: Any, bucket: str, key: str) -> bool:
    from botocore.exceptions import ClientError

    first = b"waterline conditional-write probe " + uuid.uuid4().hex.encode()
    try:
        if _put_once(client, bucket, key, first) is False:
            return True  # refused at once: someone else's probe name, conditions honoured
        try:
            client.put_object(Bucket=bucket, Key=key, Body=b"second", IfNoneMatch="*")
        except ClientError as exc:
            status, code = _status(exc)
            if status in (409, 412) or code in ("PreconditionFailed", "ConditionalRequestConflict"):
                return True
            raise
        return False
    finally:
        try:
            client.delete_object(Bucket=bucket, Key=key)
        except Exception as exc:  # noqa: BLE001  (a stray probe object is harmless: readers skip dot-names)
            log.warning("s3://%s/%s: probe object not deleted: %s", bucket, key, exc)


def _put_once(client: Any, bucket: str, key: str, body: bytes) -> bool:
    """The probe's first create: True once it holds ``body``, False if refused with another body."""
    from botocore.exceptions import ClientError

    try:
        client.put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*")
        return True
    except ClientError as exc:
        status, code = _status(exc)
        if status == 412 or code == "PreconditionFailed":
            found = read_object_s3(client, bucket, key)
            return found is not None and found[0] == body
        raise


# -- listing, ranged reads, deletes ---------------------------------------------------------

def list_tree(uri: str) -> list[StoredObject]:
    """Every object under the folder ``uri`` (recursively); empty if there is none."""
    if storage.is_s3(uri):
        bucket, prefix = split_s3(uri)
        prefix = prefix.rstrip("/") + "/"
        out = []
        for page in s3_client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                out.append(StoredObject(item["Key"][len(prefix):], item["LastModified"].timestamp(), item["Size"]))
        return out
    root = _local(uri)
    if not root.is_dir():
        return []
    out = []
    for p in root.rglob("*"):
        if p.is_file():
            st = p.stat()
            out.append(StoredObject(str(p.relative_to(root)), st.st_mtime, st.st_size))
    return out


def read_tail(uri: str, size: int, length: int) -> bytes:
    """The last ``length`` bytes of the object at ``uri`` (whose size is ``size``): one ranged
    read, so a file's footer is read without the file."""
    length = min(length, size)
    if storage.is_s3(uri):
        bucket, key = split_s3(uri)
        reply = s3_client().get_object(Bucket=bucket, Key=key, Range=f"bytes={size - length}-{size - 1}")
        return reply["Body"].read()
    with open(_local(uri), "rb") as fh:
        fh.seek(size - length)
        return fh.read(length)


def delete_objects(uris: list[str]) -> int:
    """Delete the objects at ``uris`` (absent ones are fine); the number asked to delete."""
    local = [u for u in uris if not storage.is_s3(u)]
    for uri in local:
        _local(uri).unlink(missing_ok=True)
    by_bucket: dict[str, list[str]] = {}
    for uri in uris:
        if storage.is_s3(uri):
            bucket, key = split_s3(uri)
            by_bucket.setdefault(bucket, []).append(key)
    for bucket, keys in by_bucket.items():
        for i in range(0, len(keys), 1000):
            s3_client().delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]]})
    return len(uris)


def delete_tree(uri: str) -> int:
    """Delete the folder ``uri`` and everything under it; the number of objects deleted."""
    if storage.is_s3(uri):
        bucket, prefix = split_s3(uri)
        prefix = prefix.rstrip("/") + "/"
        client = s3_client()
        keys = [prefix + o.relative for o in list_tree(uri)]
        for i in range(0, len(keys), 1000):
            client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]]})
        return len(keys)
    root = _local(uri)
    if not root.exists():
        return 0
    count = sum(1 for p in root.rglob("*") if p.is_file())
    shutil.rmtree(root, ignore_errors=True)
    return count
