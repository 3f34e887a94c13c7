"""Airflow's provider metadata for waterline: the ``waterline`` connection type and its form.

`get_provider_info` is what Airflow's providers manager reads through the
``apache_airflow_provider`` entry point (``provider_info =
"waterline.airflow.provider:get_provider_info"``); with it registered, the UI
offers the connection type with only its three fields. It imports nothing:
Airflow calls it when any of its commands starts.
"""

from __future__ import annotations

from typing import Any


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": "waterline",
        "name": "waterline",
        "description": "Delayed, embargoed and tiered releases of processed data (Spark, Delta Lake).",
        "integrations": [{"integration-name": "waterline", "tags": ["software"]}],
        "operators": [{"integration-name": "waterline", "python-modules": ["waterline.airflow.operators"]}],
        "hooks": [{"integration-name": "waterline", "python-modules": ["waterline.airflow.hooks"]}],
        "triggers": [{"integration-name": "waterline", "python-modules": ["waterline.airflow.triggers"]}],
        "connection-types": [{
            "connection-type": "waterline",
            "hook-class-name": "waterline.airflow.hooks.WaterlineHook",
            "hook-name": "Waterline",
            "ui-field-behaviour": {"hidden-fields": ["host", "schema", "login", "password", "port"],
                                   "relabeling": {}},
            "conn-fields": {
                "master": {"label": "Spark master (local[N], spark://host:7077, yarn, k8s://...)",
                           "schema": {"type": ["string", "null"]}},
                "remote": {"label": "Spark Connect URL (sc://host:15002), instead of a master",
                           "schema": {"type": ["string", "null"]}},
                "conf": {"label": "Spark conf (a JSON object)", "schema": {"type": ["string", "null"]}},
            },
        }],
    }
