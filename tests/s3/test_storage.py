"""`waterline.engine.delta.storage`: one place for where tables live and how to reach them."""

from __future__ import annotations

import subprocess
import sys

from waterline.engine.delta import storage
from waterline.engine.delta.storage import S3Settings

PROXY_ENV = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}


def test_join_keeps_the_uri_slashes():
    assert storage.join("s3a://b/wh/", "feed", "held") == "s3a://b/wh/feed/held"
    assert storage.join("/data/wh", "feed", "held") == "/data/wh/feed/held"
    assert storage.local_folder("s3a://b/wh") is None
    assert str(storage.local_folder("file:///data/wh")) == "/data/wh"


def test_custom_http_endpoint_means_path_style_and_no_tls():
    conf = storage.spark_conf(S3Settings.from_env(PROXY_ENV))
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith("SimpleAWSCredentialsProvider")
    options = storage.delta_storage_options("s3a://b/t", S3Settings.from_env(PROXY_ENV))
    assert options["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9"
    assert options["AWS_ALLOW_HTTP"] == "true"
    assert options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] == "false"


def test_aws_defaults_virtual_hosted_and_session_token():
    env = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t", "AWS_DEFAULT_REGION": "eu-west-1"}
    conf = storage.spark_conf(S3Settings.from_env(env))
    assert "spark.hadoop.fs.s3a.endpoint" not in conf
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "false"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")
    assert storage.delta_storage_options("/local/t", S3Settings.from_env(env)) is None
    assert storage.delta_storage_options("s3://b/t", S3Settings.from_env(env))["AWS_SESSION_TOKEN"] == "t"


def test_path_style_can_be_forced_off():
    settings = S3Settings.from_env({**PROXY_ENV, "WATERLINE_S3_PATH_STYLE": "false"})
    assert storage.spark_conf(settings)["spark.hadoop.fs.s3a.path.style.access"] == "false"


def test_importing_storage_starts_no_spark():
    # deltalake is loaded: `import waterline` gives `waterline.Feed`, whose JVM-free reads use it.
    code = "import sys, waterline.engine.delta.storage; print('pyspark' in sys.modules, 'py4j' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_s3_client_reaches_the_store_the_env_names(s3proxy):
    bucket, key = storage.split_s3(s3proxy.uri("probe/client.txt"))
    assert (bucket, key) == (s3proxy.bucket, "probe/client.txt")
    client = storage.s3_client()
    client.put_object(Bucket=bucket, Key=key, Body=b"hello")
    assert s3proxy.client().get_object(Bucket=bucket, Key=key)["Body"].read() == b"hello"


def test_arrow_filesystem_reads_what_the_store_holds_and_finds_staged_duplicates(s3proxy):
    """pyarrow reaches the store with the same settings (the key check of held appends reads
    the staged files' key columns with it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from waterline.engine.ingest.appended_keys import duplicate_keys

    folder = s3proxy.uri("probe/staged/data/_wl_partition=a")
    fs, path = storage.arrow_filesystem(folder)
    assert path == f"{s3proxy.bucket}/probe/staged/data/_wl_partition=a"
    pq.write_table(pa.table({"id": [1, 2, 3], "v": ["x", "y", "z"]}), f"{path}/part-0.parquet", filesystem=fs)
    pq.write_table(pa.table({"id": [3, 4], "v": ["w", "q"]}), f"{path}/part-1.parquet", filesystem=fs)
    assert duplicate_keys(folder, ["id"]) == [((3,), 2)]
    assert duplicate_keys(folder, ["id", "v"]) == []
