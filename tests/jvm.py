"""The environment of short-lived Spark drivers the tests start as subprocesses.

``tests/spark-short-lived/spark-defaults.conf`` gives them JVM flags that suit a JVM living a
few Spark operations (see the file for the numbers). Spark's launcher reads it through
``SPARK_CONF_DIR`` and prepends ``spark.driver.defaultJavaOptions`` to the options waterline
sets, so nothing in waterline changes.
"""

from __future__ import annotations

from pathlib import Path

SHORT_LIVED_CONF_DIR = Path(__file__).resolve().with_name("spark-short-lived")


def short_lived_driver_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` for processes whose Spark drivers each live a few operations."""
    return {**env, "SPARK_CONF_DIR": str(SHORT_LIVED_CONF_DIR)}
