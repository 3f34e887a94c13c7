"""The installed package is an Airflow provider: Airflow's providers manager finds it through
the ``apache_airflow_provider`` entry point (``airflow providers list``), with the ``waterline``
connection type and its form fields; and the release operator's ``deferrable`` follows
Airflow's ``[operators] default_deferrable`` as Airflow's own operators do. No Spark."""

from __future__ import annotations

import json

import pytest

import waterline
from tests.airflow.home import AirflowHome
from tests.engine.feedkit import make_spec
from waterline.airflow import WaterlineHook, WaterlineReleaseOperator, release_dag
from waterline.extras import DISTRIBUTION

SETTING = "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE"


def _json(proc) -> list[dict]:
    """The JSON list an ``airflow ... -o json`` printed (its last line; log lines may come first)."""
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_airflow_lists_the_provider_and_its_connection_form(tmp_path):
    home = AirflowHome(tmp_path, tmp_path / "feeds")
    listed = {p["package_name"]: p for p in _json(home.cli("providers", "list", "-o", "json", timeout=300))}
    assert DISTRIBUTION in listed, sorted(listed)
    assert listed[DISTRIBUTION]["version"] == waterline.__version__

    hooks = [h for h in _json(home.cli("providers", "hooks", "-o", "json", timeout=300))
             if h["connection_type"] == WaterlineHook.conn_type]
    assert hooks == [{"connection_type": "waterline", "class": "waterline.airflow.hooks.WaterlineHook",
                      "conn_id_attribute_name": "waterline_conn_id", "package_name": DISTRIBUTION,
                      "hook_name": "Waterline"}], hooks

    widgets = _json(home.cli("providers", "widgets", "-o", "json", timeout=300))
    ours = {w["connection_parameter_name"]: w for w in widgets if w["package_name"] == DISTRIBUTION}
    assert sorted(ours) == ["extra__waterline__conf", "extra__waterline__master", "extra__waterline__remote"], ours
    assert {w["class"] for w in ours.values()} == {"waterline.airflow.hooks.WaterlineHook"}


@pytest.mark.parametrize("setting, expected", [(None, False), ("True", True), ("False", False)])
def test_deferrable_follows_airflows_default_deferrable(tmp_path, monkeypatch, setting, expected):
    if setting is None:
        monkeypatch.delenv(SETTING, raising=False)
    else:
        monkeypatch.setenv(SETTING, setting)
    spec = make_spec(tmp_path, {"rt": "TRUE"})
    assert WaterlineReleaseOperator(task_id="release", spec=spec).deferrable is expected
    assert WaterlineReleaseOperator(task_id="release2", spec=spec, deferrable=not expected).deferrable is not expected
    # the release DAG is continuous: its task waits for the due moment whatever the setting says
    (task,) = release_dag(spec).tasks
    assert task.deferrable is True
    (task,) = release_dag(spec, deferrable=False).tasks
    assert task.deferrable is False
