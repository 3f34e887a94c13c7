"""Airflow reads AIRFLOW_HOME when first imported: point it at a temporary folder before any
test module imports airflow, so no test writes ~/airflow."""

from __future__ import annotations

import os
import tempfile

if "AIRFLOW_HOME" not in os.environ:
    os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="waterline-airflow-home-")
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
