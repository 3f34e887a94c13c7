"""Whole objects in a warehouse, local or S3, without a JVM: create-if-absent, list, read a tail, delete.

Pre-staged releases write their Delta commit file with `create_if_absent` (the
one atomic step a Delta writer needs of its store: of two writers of one commit
version exactly one wins), describe the files they staged with `list_tree` and
`read_tail` (Parquet footers), and discard or clean staged folders with
`list_tree` and `delete_tree`.
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from waterline.engine.log import storage
from waterline.engine.log.storage import s3_client, split_s3
from waterline.errors import WaterlineError


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
    """Write ``body`` at ``uri`` unless an object is there already: True if this call wrote it.

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
        return False
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


def conditional_put(client, bucket: str, key: str, body: bytes, **condition: str) -> str | None:
    """PutObject with a condition (``IfNoneMatch="*"``, ``IfMatch=etag``): the new ETag, or
    None when the condition failed because another writer's object is there."""
    from botocore.exceptions import ClientError  # loaded with the client: S3 warehouses only

    try:
        out = client.put_object(Bucket=bucket, Key=key, Body=body, **condition)
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = exc.response.get("Error", {}).get("Code", "")
        if status in (409, 412) or code in ("PreconditionFailed", "ConditionalRequestConflict"):
            return None
        raise
    return out["ETag"]


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
