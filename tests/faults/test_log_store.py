"""Spark's own Delta commits on S3 go through `dev.waterline.spark.ConditionalS3LogStore`.

Delta's default S3 LogStore checks for a commit file and then writes it, so two
drivers (or Spark beside waterline's own writer) can both write one version.
waterline's session configuration makes Spark use its LogStore instead, which
creates commit files only if absent (S3A's conditional create) and reads a
write back after a failure, so a retried write that had landed is a success.
These tests call the LogStore as Delta does (through the classic session's JVM),
through the fault proxy, and check Spark's session names it.
"""

from __future__ import annotations

import pytest
from py4j.protocol import Py4JJavaError

from tests.faults.proxy import Rule

pytestmark = pytest.mark.spark

STORE = "dev.waterline.spark.ConditionalS3LogStore"


def _store_and_conf(spark):
    jvm = spark._jvm
    conf = spark._jsparkSession.sessionState().newHadoopConf()  # the session's fs.s3a.* settings included
    return jvm.dev.waterline.spark.ConditionalS3LogStore(conf), conf


def _lines(spark, *lines: str):
    """A Java ``Iterator<String>`` of ``lines``, as Delta hands a LogStore a commit's actions."""
    out = spark._jvm.java.util.ArrayList()
    for line in lines:
        out.add(line)
    return out.iterator()


def _commit_path(spark, uri: str):
    return spark._jvm.org.apache.hadoop.fs.Path(uri)


def test_waterlines_sessions_name_the_conditional_log_store(faulty_spark):
    assert faulty_spark.conf.get("spark.delta.logStore.s3a.impl") == STORE
    assert faulty_spark.conf.get("spark.delta.logStore.s3.impl") == STORE


def test_a_commit_file_is_created_once_and_a_second_writer_is_told_it_exists(faulty_spark, faulty_s3, s3proxy):
    proxy, warehouse = faulty_s3
    store, conf = _store_and_conf(faulty_spark)
    uri = f"{warehouse}/t/_delta_log/00000000000000000000.json"
    path = _commit_path(faulty_spark, uri)
    store.write(path, _lines(faulty_spark, '{"commitInfo":{"writer":"first"}}'), False, conf)
    store.write(path, _lines(faulty_spark, '{"commitInfo":{"writer":"first"}}'), False, conf)  # same bytes: ours
    with pytest.raises(Py4JJavaError) as lost:
        store.write(path, _lines(faulty_spark, '{"commitInfo":{"writer":"second"}}'), False, conf)
    assert lost.value.java_exception.getClass().getName() == "java.nio.file.FileAlreadyExistsException"
    bucket, key = uri.removeprefix("s3a://").split("/", 1)
    body = s3proxy.client().get_object(Bucket=bucket, Key=key)["Body"].read()
    assert body == b'{"commitInfo":{"writer":"first"}}\n'  # the second writer overwrote nothing


def test_a_commit_whose_answer_was_lost_is_a_success(faulty_spark, faulty_s3, s3proxy):
    proxy, warehouse = faulty_s3
    store, conf = _store_and_conf(faulty_spark)
    uri = f"{warehouse}/t/_delta_log/00000000000000000001.json"
    [lost] = proxy.add(Rule("drop_response", r"/t/_delta_log/00000000000000000001\.json$"))
    store.write(_commit_path(faulty_spark, uri), _lines(faulty_spark, '{"commitInfo":{"writer":"me"}}'), False, conf)
    assert lost.hits == 1
    bucket, key = uri.removeprefix("s3a://").split("/", 1)
    assert s3proxy.client().get_object(Bucket=bucket, Key=key)["Body"].read() == b'{"commitInfo":{"writer":"me"}}\n'


def test_spark_creates_and_appends_through_it_beside_another_writer(faulty_spark, faulty_s3):
    """Spark creates a table and appends to it through the LogStore (S3A's conditional create
    of every commit file), around a commit deltalake made: every commit stays."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from waterline.engine.delta.storage import delta_storage_options, delta_table

    _, warehouse = faulty_s3
    path = f"{warehouse}/both"
    faulty_spark.range(3).write.format("delta").save(path)
    options = {**delta_storage_options(path), "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    write_deltalake(path.replace("s3a://", "s3://"), pa.table({"id": pa.array([10], pa.int64())}), mode="append",
                    storage_options=options)
    faulty_spark.range(20, 22).write.format("delta").mode("append").save(path)
    ids = sorted(r["id"] for r in faulty_spark.read.format("delta").load(path).collect())
    assert ids == [0, 1, 2, 10, 20, 21]
    assert delta_table(path).version() == 2
