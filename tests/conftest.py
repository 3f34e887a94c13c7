"""Shared fixtures: one Spark session per test process, temp warehouses."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from waterline.engine.spark.session import get_session

    session = get_session()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3proxy(tmp_path_factory):
    """A real S3 server (s3proxy, filesystem backend) on 127.0.0.1 with one bucket.

    While it runs, the process's AWS environment (AWS_ENDPOINT_URL, keys, region)
    points at it, so `waterline.engine.delta.storage`, ``deltalake`` and Spark sessions
    (or subprocesses) started after it reach it. Stopped at the end of the session.
    """
    from tests.s3proxy import S3Proxy, restore_env, set_env

    server = S3Proxy.start(tmp_path_factory.mktemp("s3proxy"))
    saved = set_env(server.env)
    try:
        yield server
    finally:
        restore_env(saved)
        server.stop()


@pytest.fixture(scope="session")
def s3_spark(spark, s3proxy):
    """The test Spark session, set to reach ``s3proxy`` (session-level s3a conf)."""
    from waterline.engine.delta import storage

    for key, value in storage.session_conf().items():
        spark.conf.set(key, value)
    return spark
