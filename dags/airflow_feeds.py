"""The demo feeds as Airflow DAGs (the Dagster code location is dags/__init__.py).

    export AIRFLOW_HOME=$PWD/.waterline/airflow_home AIRFLOW__CORE__DAGS_FOLDER=$PWD/dags
    airflow standalone                      # or `make airflow`

Per feed in dags/feeds/: ``<feed>_ingest`` (a run per partition) and
``<feed>_release`` (continuous, deferrable; unpaused so releases follow ingests).
Paths in the specs resolve against the repo root, whatever the working directory.
Spark runs where the specs' ``spark:`` keys say, unless the Airflow connection
``waterline_default`` (type ``waterline``, see docs/airflow.md) or
``WATERLINE_SPARK_MASTER``/``_REMOTE`` say otherwise.
"""

from pathlib import Path

from waterline.airflow import dags_from_specs

REPO_ROOT = Path(__file__).resolve().parent.parent
FEEDS = sorted((Path(__file__).resolve().parent / "feeds").glob("*.yaml"))

globals().update(dags_from_specs(FEEDS, base_dir=REPO_ROOT, release_paused=False))
