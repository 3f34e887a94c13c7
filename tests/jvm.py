"""The JVM flags of the Spark drivers the tests start as subprocesses.

``tests/spark-short-lived/spark-defaults.conf`` gives them JVM flags that suit a JVM living a
few Spark operations (see the file for the numbers). Spark's launcher reads it through
``SPARK_CONF_DIR`` and prepends ``spark.driver.defaultJavaOptions`` to the options waterline
sets, so nothing in waterline changes. `use_short_lived_drivers` (tests/conftest.py, at
import) sets it for every process the tests start: CLI runs, Dagster run workers, Airflow
task runs, killed and restarted streams. A JVM that lives for the whole run (a test
process's own session, a Connect server) starts in `long_lived_jvm`, without it.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

SHORT_LIVED_CONF_DIR = Path(__file__).resolve().with_name("spark-short-lived")
_ENV = "SPARK_CONF_DIR"


def use_short_lived_drivers() -> None:
    """Every Spark driver started from this process (and its children) gets the short-lived
    flags, unless ``SPARK_CONF_DIR`` names another folder already."""
    os.environ.setdefault(_ENV, str(SHORT_LIVED_CONF_DIR))


@contextmanager
def long_lived_jvm() -> Iterator[None]:
    """A JVM started in the block gets Spark's defaults (the short-lived flags removed, if
    they are what `use_short_lived_drivers` set)."""
    ours = os.environ.get(_ENV) == str(SHORT_LIVED_CONF_DIR)
    if ours:
        del os.environ[_ENV]
    try:
        yield
    finally:
        if ours:
            os.environ[_ENV] = str(SHORT_LIVED_CONF_DIR)
