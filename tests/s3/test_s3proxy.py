"""The s3proxy fixture is a real S3 server with the conditional writes a lease needs."""

from __future__ import annotations

import pytest


def _status(exc) -> int:
    return exc.response["ResponseMetadata"]["HTTPStatusCode"]


def test_second_put_with_if_none_match_is_refused(s3proxy):
    from botocore.exceptions import ClientError

    client = s3proxy.client()
    client.put_object(Bucket=s3proxy.bucket, Key="probe/lease", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as refused:
        client.put_object(Bucket=s3proxy.bucket, Key="probe/lease", Body=b"second", IfNoneMatch="*")
    assert _status(refused.value) == 412
    assert client.get_object(Bucket=s3proxy.bucket, Key="probe/lease")["Body"].read() == b"first"


def test_put_with_if_match_needs_the_current_etag(s3proxy):
    from botocore.exceptions import ClientError

    client = s3proxy.client()
    etag = client.put_object(Bucket=s3proxy.bucket, Key="probe/fenced", Body=b"v1")["ETag"]
    with pytest.raises(ClientError) as refused:
        client.put_object(Bucket=s3proxy.bucket, Key="probe/fenced", Body=b"v2", IfMatch='"0000"')
    assert _status(refused.value) == 412
    client.put_object(Bucket=s3proxy.bucket, Key="probe/fenced", Body=b"v3", IfMatch=etag)
    assert client.get_object(Bucket=s3proxy.bucket, Key="probe/fenced")["Body"].read() == b"v3"
