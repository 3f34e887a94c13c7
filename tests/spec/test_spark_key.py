"""The spec key `spark:` and its environment overrides (no Spark started)."""

from __future__ import annotations

import pytest

from tests.engine.feedkit import spec_dict
from waterline.engine.spark.config import SessionConfig, spark_conf
from waterline.errors import WaterlineError
from waterline.spec import SpecError, spec_from_dict


def _spec(tmp_path, spark):
    return spec_from_dict(spec_dict(tmp_path, {"rt": "TRUE"}, spark=spark), base_dir=tmp_path)


def test_spark_key_round_trips_and_sets_the_session(tmp_path, monkeypatch):
    monkeypatch.delenv("WATERLINE_SPARK_MASTER", raising=False)
    monkeypatch.delenv("WATERLINE_SPARK_REMOTE", raising=False)
    spec = _spec(tmp_path, {"master": "spark://127.0.0.1:7077", "conf": {"spark.executor.memory": "2g", "x": True}})
    assert spec_from_dict(spec.to_dict(), base_dir=tmp_path) == spec
    config = SessionConfig.for_spec(spec.spark)
    assert (config.mode, config.master, dict(config.conf)) == (
        "cluster", "spark://127.0.0.1:7077", {"spark.executor.memory": "2g", "x": "true"})
    conf = spark_conf(config)
    assert conf["spark.driver.host"] == "127.0.0.1" and conf["spark.executor.memory"] == "2g"
    assert SessionConfig.for_spec(_spec(tmp_path, {"remote": "sc://h:15002"}).spark).mode == "connect"
    assert SessionConfig.for_spec(None).mode == "local"


def test_environment_overrides_the_spec(tmp_path, monkeypatch):
    spec = _spec(tmp_path, {"remote": "sc://spec:1"})
    monkeypatch.setenv("WATERLINE_SPARK_MASTER", "local[3]")
    config = SessionConfig.for_spec(spec.spark)
    assert (config.mode, config.master, config.remote) == ("local", "local[3]", None)
    monkeypatch.setenv("WATERLINE_SPARK_REMOTE", "sc://env:2")
    with pytest.raises(WaterlineError, match="only one of WATERLINE_SPARK_MASTER and WATERLINE_SPARK_REMOTE"):
        SessionConfig.for_spec(spec.spark)
    monkeypatch.delenv("WATERLINE_SPARK_MASTER")
    assert SessionConfig.for_spec(spec.spark).remote == "sc://env:2"
    monkeypatch.setenv("WATERLINE_SPARK_REMOTE", "http://nope")
    with pytest.raises(WaterlineError, match="WATERLINE_SPARK_REMOTE: expected a Spark Connect URL"):
        SessionConfig.from_env()


@pytest.mark.parametrize("spark, message", [
    ({"master": "spark://a:1", "remote": "sc://b:2"}, "spark: give one of master"),
    ({"master": "mars://x"}, "spark.master: expected local"),
    ({"remote": "spark://x:1"}, "spark.remote: expected a Spark Connect URL"),
    ({"remote": "sc://x", "conf": {"a": [1]}}, "spark.conf.a: expected a string"),
    ({"mastr": "local"}, "spark.mastr: unknown key; did you mean 'master'"),
    ("local", "spark: expected a mapping"),
])
def test_bad_spark_keys_are_one_line_errors(tmp_path, spark, message):
    with pytest.raises(SpecError) as info:
        _spec(tmp_path, spark)
    assert message in str(info.value) and "\n" not in str(info.value)
