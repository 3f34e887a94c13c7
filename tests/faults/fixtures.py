"""Fixtures of the fault tests: a fault-injecting proxy in front of the session's s3proxy.

A plugin the root conftest loads (``pytest_plugins``), not a conftest of this folder:
tests elsewhere (the stream drain through faults) use the same session-scoped proxy, and
importing the fixtures into their module would start a second proxy in the same process.

Tests write to the bucket ``faults`` through the proxy: boto3 and deltalake because
the process's AWS endpoint points at it while a test runs, Spark's S3A through a
per-bucket endpoint (``fs.s3a.bucket.faults.endpoint``), so every client waterline
uses meets the same faults. Other buckets are reached as usual.
"""

from __future__ import annotations

import uuid
from urllib.parse import urlparse

import pytest

from tests.faults.proxy import FaultProxy
from tests.s3proxy import ACCESS_KEY, SECRET_KEY, restore_env, set_env

BUCKET = "faults"


@pytest.fixture(scope="session")
def fault_proxy(s3proxy):
    upstream = urlparse(s3proxy.endpoint)
    proxy = FaultProxy((upstream.hostname, upstream.port), (ACCESS_KEY, SECRET_KEY)).start()
    s3proxy.client().create_bucket(Bucket=BUCKET)
    try:
        yield proxy
    finally:
        proxy.stop()


@pytest.fixture
def faulty_s3(fault_proxy):
    """The proxy, with this process's AWS endpoint pointing at it for the test; a warehouse
    URI prefix of the test's own under ``s3a://faults/``. Rules are cleared afterwards."""
    # Two tries per request in boto3 (not five): a storm of 503s meets waterline's own retries
    # sooner; a lost answer still meets the retry that finds the write landed.
    saved = set_env({"AWS_ENDPOINT_URL": fault_proxy.endpoint, "AWS_MAX_ATTEMPTS": "2"})
    fault_proxy.clear()
    try:
        yield fault_proxy, f"s3a://{BUCKET}/{uuid.uuid4().hex[:8]}"
    finally:
        fault_proxy.clear()
        restore_env(saved)


@pytest.fixture(scope="session")
def faulty_spark(s3_spark, fault_proxy):
    """The test Spark session, reaching the ``faults`` bucket through the proxy."""
    s3_spark.conf.set(f"fs.s3a.bucket.{BUCKET}.endpoint", fault_proxy.endpoint)
    return s3_spark
