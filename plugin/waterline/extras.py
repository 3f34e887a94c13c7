"""The optional parts of the `waterline-tiers` distribution and the one line a user reads
when one is missing.

The core (spec, plan, status, read, the Spark engine, the CLI) needs none of them; each
adapter that needs one checks for it where it is entered (`require`), and the CLI turns
any other missing import of theirs into the same line (`missing_extra`).
"""

from __future__ import annotations

import importlib.util

from waterline.errors import WaterlineError

DISTRIBUTION = "waterline-tiers"

#: top-level import name -> the extra that installs it (pyproject.toml's optional-dependencies)
EXTRA_OF = {
    "dagster": "dagster",
    "airflow": "airflow",
    "starlette": "sharing",
    "uvicorn": "sharing",
    "confluent_kafka": "kafka",
    "plotly": "reports",
}


class MissingExtra(WaterlineError, ImportError):
    """An optional part of waterline is not installed; ``str()`` names the pip command."""


def install_line(feature: str, extra: str) -> str:
    return f"{feature} needs the [{extra}] extra: pip install '{DISTRIBUTION}[{extra}]'"


def require(feature: str, *modules: str, extra: str | None = None) -> None:
    """Raise `MissingExtra` for the first of ``modules`` (top-level import names) that is not
    installed; ``feature`` is what the user asked for (``waterline.dagster``, ``--html``),
    ``extra`` the one to name when it is not the module's own."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise MissingExtra(install_line(feature, extra or EXTRA_OF[module]))


def missing_extra(exc: BaseException, feature: str = "this command") -> MissingExtra | None:
    """The `MissingExtra` a ModuleNotFoundError of an extra's import stands for, else None."""
    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    extra = EXTRA_OF.get((name or "").split(".")[0])
    return MissingExtra(install_line(feature, extra)) if extra else None
