"""Airflow's provider metadata for waterline: the ``waterline`` connection type and its form.

`get_provider_info` is what Airflow's providers manager reads through the
``apache_airflow_provider`` entry point that pyproject.toml registers
(``provider_info = "waterline.airflow.provider:get_provider_info"``): with it,
``airflow providers list`` shows ``waterline-tiers`` and the UI offers the
``waterline`` connection type with only its three fields (``conn-fields`` and
``ui-field-behaviour``, read without importing the hook, as Airflow 3.2+ wants).

Airflow checks the dictionary against its ``provider_info.schema.json`` (``name`` and
``description`` required) and refuses one whose ``package-name`` is not the installed
distribution's name, so it is `waterline.extras.DISTRIBUTION`. Airflow calls this when
any of its commands starts: it imports only the distribution name.
"""

from __future__ import annotations

from typing import Any

from waterline.extras import DISTRIBUTION


def get_provider_info() -> dict[str, Any]:
    """The provider's metadata in the runtime form Airflow's providers manager validates."""
    from waterline import __version__  # the package is imported by now (this module is inside it)

    return {
        "package-name": DISTRIBUTION,
        "name": "waterline",
        "versions": [__version__],
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
                                   "relabeling": {},
                                   "placeholders": {"extra": '{"master": "spark://host:7077", "conf": {}}'}},
            "conn-fields": {
                "master": {"label": "Spark master (local[N], spark://host:7077, yarn, k8s://...)",
                           "schema": {"type": ["string", "null"]}},
                "remote": {"label": "Spark Connect URL (sc://host:15002), instead of a master",
                           "schema": {"type": ["string", "null"]}},
                "conf": {"label": "Spark conf (a JSON object)", "schema": {"type": ["string", "null"]}},
            },
        }],
    }
