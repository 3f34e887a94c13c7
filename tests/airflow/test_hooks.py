"""`WaterlineHook`: Spark settings from an Airflow connection, a `waterline.Feed` per spec (no Spark
starts). Connections come from ``AIRFLOW_CONN_<ID>`` variables, as Airflow reads them first."""

from __future__ import annotations

import json
from importlib.resources import files

import jsonschema
import pytest
from airflow.sdk.exceptions import AirflowNotFoundException

from tests.airflow.home import REPO
from tests.engine.feedkit import make_spec
from waterline import Feed
from waterline.airflow import WaterlineHook
from waterline.airflow.hooks import connection_settings
from waterline.airflow.provider import get_provider_info
from waterline.errors import WaterlineError

TIERS = {"all": "TRUE"}


@pytest.fixture(autouse=True)
def _no_spark_env(monkeypatch):
    for name in ("WATERLINE_SPARK_MASTER", "WATERLINE_SPARK_REMOTE"):
        monkeypatch.delenv(name, raising=False)


def _connection(monkeypatch, conn_id: str, extra: dict) -> str:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "waterline", "extra": extra}))
    return conn_id


def test_without_the_default_connection_the_spec_and_the_environment_decide(tmp_path, monkeypatch):
    spec = make_spec(tmp_path, TIERS, spark={"master": "local[3]", "conf": {"spark.a": "1"}})
    config = WaterlineHook().session_config(spec)
    assert (config.master, config.remote, dict(config.conf)) == ("local[3]", None, {"spark.a": "1"})
    assert WaterlineHook(None).session_config(make_spec(tmp_path, TIERS)).master == "local[2]"
    monkeypatch.setenv("WATERLINE_SPARK_REMOTE", "sc://127.0.0.1:15002")
    assert WaterlineHook().session_config(spec).remote == "sc://127.0.0.1:15002"


def test_the_connection_goes_over_the_spec_and_under_the_environment(tmp_path, monkeypatch):
    spec = make_spec(tmp_path, TIERS, spark={"master": "local[3]", "conf": {"spark.a": "1", "spark.b": "1"}})
    conn = _connection(monkeypatch, "wl_master", {"master": "spark://10.0.0.5:7077", "conf": {"spark.b": "2"}})
    hook = WaterlineHook(conn)
    config = hook.session_config(spec)
    assert (config.master, config.remote) == ("spark://10.0.0.5:7077", None)
    assert dict(config.conf) == {"spark.a": "1", "spark.b": "2"}
    assert config.app_name == "waterline-airflow"
    # a remote in the connection replaces the spec's master (the two never mix)
    remote = WaterlineHook(_connection(monkeypatch, "wl_remote", {"remote": "sc://10.0.0.5:15002"}))
    assert remote.session_config(spec).remote == "sc://10.0.0.5:15002"
    # the worker's environment wins, as everywhere
    monkeypatch.setenv("WATERLINE_SPARK_MASTER", "local[1]")
    assert (WaterlineHook(conn).session_config(spec).master, WaterlineHook(conn).session_config(spec).remote) == (
        "local[1]", None)
    assert hook.test_connection() == (True, "waterline: Spark at spark://10.0.0.5:7077")


def test_get_feed_takes_a_spec_or_its_path_and_starts_no_spark(tmp_path, monkeypatch):
    conn = _connection(monkeypatch, "wl_feed", {"master": "local[1]", "conf": "{\"spark.x\": \"y\"}"})
    feed = WaterlineHook(conn).get_feed(REPO / "dags" / "feeds" / "ticks.yaml", base_dir=REPO)
    assert isinstance(feed, Feed) and feed.name == "ticks" and not feed.spark_started
    assert feed.session_config().master == "local[1]" and dict(feed.session_config().conf) == {"spark.x": "y"}
    assert str(feed.spec.warehouse) == str(REPO / ".waterline" / "warehouse")
    spec = make_spec(tmp_path, TIERS)
    assert WaterlineHook(conn).get_feed(spec).spec is spec
    assert WaterlineHook(conn, spark="local[4]").get_feed(spec).session_config().master == "local[4]"


def test_a_named_connection_must_exist_and_bad_extras_are_one_line(tmp_path, monkeypatch):
    spec = make_spec(tmp_path, TIERS)
    with pytest.raises(AirflowNotFoundException):
        WaterlineHook("wl_nowhere").get_feed(spec)
    assert WaterlineHook("wl_nowhere").test_connection()[0] is False
    bad = {
        "wl_both": ({"master": "local[1]", "remote": "sc://h:1"}, "connection wl_both: extra: set only one of master and remote"),
        "wl_url": ({"master": "http://h"}, "connection wl_url: extra.master: expected a Spark master URL"),
        "wl_sc": ({"remote": "h:15002"}, "connection wl_sc: extra.remote: expected a Spark Connect URL"),
        "wl_key": ({"mastr": "local[1]"}, "connection wl_key: extra: unknown keys ['mastr']"),
        "wl_conf": ({"conf": "{nope"}, "connection wl_conf: extra.conf: not valid JSON"),
    }
    for conn_id, (extra, message) in bad.items():
        with pytest.raises(WaterlineError) as err:
            WaterlineHook(_connection(monkeypatch, conn_id, extra)).session_config(spec)
        assert str(err.value).startswith(message) and "\n" not in str(err.value), str(err.value)


def test_the_connection_forms_prefixed_and_empty_fields_read_as_their_names():
    settings = connection_settings({"extra__waterline__master": "local[2]", "extra__waterline__remote": "",
                                    "extra__waterline__conf": None}, where="connection c")
    assert settings == {"master": "local[2]", "conf": {}}


def test_the_hook_is_a_provider_connection_type():
    info = get_provider_info()
    # Airflow's own schema for provider metadata, as its providers manager validates it
    jsonschema.validate(info, json.loads(files("airflow").joinpath("provider_info.schema.json").read_text()))
    (conn,) = info["connection-types"]
    assert conn["connection-type"] == WaterlineHook.conn_type
    assert conn["hook-class-name"] == f"{WaterlineHook.__module__}.{WaterlineHook.__qualname__}"
    assert set(conn["conn-fields"]) == {"master", "remote", "conf"}
    assert WaterlineHook.default_conn_name == "waterline_default"
    assert WaterlineHook.get_ui_field_behaviour()["hidden_fields"] == conn["ui-field-behaviour"]["hidden-fields"]
