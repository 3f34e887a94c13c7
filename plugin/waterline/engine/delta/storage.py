"""Where the warehouse lives: local folders and S3-compatible object stores, Spark-free.

A warehouse is a local folder or an ``s3a://bucket/prefix`` (``s3://`` also works)
URI. Endpoint and credentials come from the standard AWS environment variables,
read at call time so a test or a Dagster run can set them per process:

* ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``
* ``AWS_REGION`` (or ``AWS_DEFAULT_REGION``)
* ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``: any S3-compatible store
  (MinIO, s3proxy, Ceph ...); an ``http://`` endpoint turns TLS off.
* ``WATERLINE_S3_PATH_STYLE`` (``true``/``false``): path-style requests
  (``endpoint/bucket/key``); default true with a custom endpoint, false on AWS.

The same settings feed both readers: Spark's s3a filesystem (`spark_conf`,
merged into `waterline.engine.spark.session.spark_conf`, and what a Spark Connect
server must be started with) and the ``deltalake`` package the sensor, ``status``
and the engine's log reads use (`delta_table`, `is_delta_table`). Every
``deltalake`` table opened by waterline goes through `delta_table`, so the two
readers can never disagree about where a table is.

This module imports no pyspark (the release sensor and the Airflow trigger
import it).
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from deltalake import DeltaTable

_URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
S3_SCHEMES = ("s3a", "s3", "s3n")


def is_uri(path: str | os.PathLike) -> bool:
    """True for ``scheme://...`` locations (object stores, ``file://``)."""
    return bool(_URI.match(str(path)))


def is_s3(path: str | os.PathLike) -> bool:
    match = _URI.match(str(path))
    return bool(match) and match.group("scheme").lower() in S3_SCHEMES


def join(base: str | os.PathLike, *parts: str) -> str:
    """``base/part/...`` for a local folder or a URI (``Path`` would eat the ``//``)."""
    if is_uri(base):
        return "/".join([str(base).rstrip("/"), *(p.strip("/") for p in parts)])
    return str(Path(base).joinpath(*parts))


def beside(path: str, name: str) -> str:
    """``name`` in the folder that holds ``path`` (a file path or a URI)."""
    return join(str(path).rstrip("/").rpartition("/")[0] or ".", name)


def local_folder(path: str | os.PathLike) -> Path | None:
    """The local folder behind ``path``; None for an object-store URI."""
    text = str(path)
    if text.startswith("file://"):
        return Path(text[len("file://"):])
    return None if is_uri(text) else Path(text)


@dataclass(frozen=True)
class S3Settings:
    """Endpoint and credentials of the S3-compatible store, from the environment."""

    endpoint: str | None = None
    region: str | None = None
    path_style: bool = False
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> S3Settings:
        env = os.environ if env is None else env
        endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None
        path_style = env.get("WATERLINE_S3_PATH_STYLE")
        return cls(
            endpoint=endpoint,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
            path_style=(path_style.lower() in ("1", "true", "yes")) if path_style else endpoint is not None,
            access_key=env.get("AWS_ACCESS_KEY_ID") or None,
            secret_key=env.get("AWS_SECRET_ACCESS_KEY") or None,
            session_token=env.get("AWS_SESSION_TOKEN") or None,
        )

    @property
    def plain_http(self) -> bool:
        return bool(self.endpoint) and self.endpoint.lower().startswith("http://")


def spark_conf(settings: S3Settings | None = None) -> dict[str, str]:
    """The Spark conf (``spark.hadoop.fs.s3a.*``) for s3a:// and s3:// warehouses.

    Empty when nothing is configured: Hadoop's defaults then reach AWS with the
    default credential chain. ``s3://`` is mapped to the s3a filesystem too.
    The keys are passed as conf so executors on other machines get them; a
    Spark Connect server takes them at start (`waterline spark start`).
    """
    s = settings or S3Settings.from_env()
    conf = {"spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem"}
    prefix = "spark.hadoop.fs.s3a."
    if s.endpoint:
        conf[prefix + "endpoint"] = s.endpoint
        conf[prefix + "connection.ssl.enabled"] = "false" if s.plain_http else "true"
    conf[prefix + "path.style.access"] = "true" if s.path_style else "false"
    if s.region:
        conf[prefix + "endpoint.region"] = s.region
    elif s.endpoint:
        # A custom endpoint needs some region for request signing; S3-compatible
        # stores accept any, and without one the SDK probes EC2 metadata.
        conf[prefix + "endpoint.region"] = "us-east-1"
    if s.access_key and s.secret_key:
        conf[prefix + "access.key"] = s.access_key
        conf[prefix + "secret.key"] = s.secret_key
        if s.session_token:
            conf[prefix + "session.token"] = s.session_token
            conf[prefix + "aws.credentials.provider"] = (
                "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
            )
        else:
            conf[prefix + "aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
    return conf


def session_conf(settings: S3Settings | None = None) -> dict[str, str]:
    """`spark_conf` as session-level Hadoop keys (``fs.s3a.*``), for ``spark.conf.set``.

    Spark copies a session's conf into the Hadoop conf of every file system it
    opens, so these work on an already running session, a Spark Connect one
    included (checked with Delta writes, MERGE and reads on s3proxy). A file
    system instance is cached per bucket: set them before the first access.
    """
    return {key.removeprefix("spark.hadoop."): value for key, value in spark_conf(settings).items()}


def delta_storage_options(path: str, settings: S3Settings | None = None) -> dict[str, str] | None:
    """``deltalake`` storage_options for ``path``; None for a local table.

    waterline makes no commit through ``deltalake`` (its commit files go through
    `waterline.engine.delta.commit`, with boto3's conditional PutObject), so no locking
    provider or unsafe-rename setting is needed: deltalake reads, writes checkpoints and
    deletes expired log files, none of which is a commit.
    """
    if not is_s3(path):
        return None
    s = settings or S3Settings.from_env()
    options: dict[str, str] = {}
    if s.endpoint:
        options["AWS_ENDPOINT_URL"] = s.endpoint
        if s.plain_http:
            options["AWS_ALLOW_HTTP"] = "true"
    options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false" if s.path_style else "true"
    options["AWS_REGION"] = s.region or "us-east-1"
    if s.access_key and s.secret_key:
        options["AWS_ACCESS_KEY_ID"] = s.access_key
        options["AWS_SECRET_ACCESS_KEY"] = s.secret_key
        if s.session_token:
            options["AWS_SESSION_TOKEN"] = s.session_token
    return options


def split_s3(uri: str) -> tuple[str, str]:
    """``s3a://bucket/some/key`` -> ``("bucket", "some/key")``."""
    if not is_s3(uri):
        raise ValueError(f"not an S3 URI: {uri!r}")
    bucket, _, key = uri[_URI.match(uri).end():].partition("/")
    return bucket, key


def s3_client(settings: S3Settings | None = None, *, presign: bool = False):
    """A boto3 S3 client with the same endpoint, region, addressing style and keys as Spark's.

    For what neither Spark nor deltalake offers, e.g. conditional puts (``If-None-Match``).
    Without keys in the environment boto3's own credential chain applies.

    ``presign=True``: a client for pre-signed URLs (the sharing server's S3 file URLs),
    signing with Signature Version 4: botocore would sign URLs for a custom endpoint in
    us-east-1 with the deprecated version 2, which newer AWS regions refuse.

    One client per settings and process, kept: creating one costs ~10 ms, and an ingest on
    S3 asked for five (the lease, the staged files, the commit). boto3 clients are
    thread-safe, but their connections must not cross a fork (Airflow forks task runners).
    """
    return _client(settings or S3Settings.from_env(), presign, os.getpid())


@functools.lru_cache(maxsize=8)
def _client(s: S3Settings, presign: bool, pid: int):
    # boto3 costs ~0.2 s to import, and only S3 warehouses need it: not at module level.
    import boto3
    from botocore.config import Config

    config = Config(s3={"addressing_style": "path" if s.path_style else "virtual"})
    if presign:
        config = config.merge(Config(signature_version="s3v4"))
    return boto3.client(
        "s3",
        endpoint_url=s.endpoint,
        region_name=s.region or "us-east-1",
        aws_access_key_id=s.access_key,
        aws_secret_access_key=s.secret_key,
        aws_session_token=s.session_token,
        config=config,
    )


def arrow_filesystem(path: str, settings: S3Settings | None = None):
    """``(pyarrow filesystem, path in it)`` for a local path or an S3 URI, with the same
    endpoint, region, addressing style and keys as Spark's: for reading Parquet files
    (a few columns of them) without a JVM."""
    import pyarrow.fs as pafs

    if not is_s3(path):
        return pafs.LocalFileSystem(), str(local_folder(path))
    s = settings or S3Settings.from_env()
    options: dict = {"region": s.region or "us-east-1", "force_virtual_addressing": not s.path_style}
    if s.endpoint:
        scheme, _, host = s.endpoint.partition("://")
        options.update(endpoint_override=host or scheme, scheme=scheme if host else "https")
    if s.access_key and s.secret_key:
        options.update(access_key=s.access_key, secret_key=s.secret_key, session_token=s.session_token)
    bucket, key = split_s3(path)
    return pafs.S3FileSystem(**options), f"{bucket}/{key}"


def _delta_rs_uri(path: str) -> str:
    """delta-rs names S3 ``s3://``; Spark's ``s3a://`` is the same bucket and key."""
    match = _URI.match(path)
    if match and match.group("scheme").lower() in S3_SCHEMES:
        return "s3://" + path[match.end():]
    return path


def delta_table(path: str, **kwargs) -> DeltaTable:
    """Open the Delta table at ``path`` with ``deltalake``, with the warehouse's storage options."""
    return DeltaTable(_delta_rs_uri(str(path)), storage_options=delta_storage_options(str(path)), **kwargs)


def is_delta_table(path: str) -> bool:
    """True when ``path`` holds a Delta table (reads only the log)."""
    return DeltaTable.is_deltatable(_delta_rs_uri(str(path)), storage_options=delta_storage_options(str(path)))
