"""docs/settings.md names every setting the code reads: each `WATERLINE_*` environment
variable (package and build hook), each top-level spec key, each Spark setting waterline
gives a session, with its value. No Spark: the page and the code, read as text and data."""

from __future__ import annotations

import re
from pathlib import Path

from waterline.engine.spark.config import DELTA_CONF, ENGINE_SESSION_CONF, LOCAL_DEFAULTS
from waterline.spec.schema import SPEC_KEYS

ROOT = Path(__file__).parents[2]
PAGE = (ROOT / "docs" / "settings.md").read_text()
# Python constants of the spec module spelled like variables, and the prefix of the Kafka credential family.
NOT_VARIABLES = {"WATERLINE_MODES", "WATERLINE_KEYS", "WATERLINE_KAFKA_"}


def _variables_read_by_the_code() -> set[str]:
    sources = [*(ROOT / "plugin" / "waterline").rglob("*.py"), ROOT / "setup.py"]
    names = set()
    for source in sources:
        names |= set(re.findall(r"WATERLINE_[A-Z0-9_]+", source.read_text()))
    return names - NOT_VARIABLES


def test_every_environment_variable_is_on_the_page():
    variables = _variables_read_by_the_code()
    assert len(variables) > 10  # the scan found them: the check below can fail
    missing = sorted(name for name in variables if f"`{name}`" not in PAGE)
    assert not missing, f"docs/settings.md lacks {missing}"


def test_every_spec_key_is_on_the_page():
    missing = sorted(key for key in SPEC_KEYS if f"| `{key}` |" not in PAGE)
    assert not missing, f"docs/settings.md lacks the spec keys {missing}"


def test_every_spark_setting_is_on_the_page_with_its_value():
    settings = {**LOCAL_DEFAULTS, **DELTA_CONF, **ENGINE_SESSION_CONF}
    settings.pop("spark.sql.warehouse.dir")  # an absolute path of the process's folder: named, not valued
    missing = sorted(key for key, value in settings.items() if f"| `{key}` | `{value}` |" not in PAGE)
    assert not missing and "`spark.sql.warehouse.dir`" in PAGE, f"docs/settings.md lacks {missing}"
