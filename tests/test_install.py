"""The installed, locked environment: Airflow 3 and the Dagster stack side by side."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version


def test_the_locked_environment_has_no_broken_requirement():
    # `pip check` reads every installed package's declared requirements (offline): with
    # apache-airflow beside dagster, a conflict either resolution would hide shows here.
    proc = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_airflow_3_and_the_pinned_dagster_stack_are_installed_together():
    assert version("apache-airflow").startswith("3.3.")
    assert version("dagster") == "1.13.27" and version("dagster-webserver") == "1.13.27"
    assert version("pyspark") == "4.2.0"


def test_the_distribution_is_waterline_tiers_and_imports_as_waterline():
    # `waterline` on the package index is another project: ours is published as waterline-tiers.
    import waterline

    assert version("waterline-tiers") == waterline.__version__
