"""Extras by use: the core imports and runs its CLI with every extra missing, and an adapter
entered without its extra says, in one line, which one to install.

A missing package is made missing the way Python's import system itself allows
(``sys.modules[name] = None``: ``import name`` raises ModuleNotFoundError and
``importlib.util.find_spec`` finds nothing), in a fresh interpreter each. The wheel
installed with only the core or with one extra, outside the checkout, is
tests/packaging/test_wheel.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from waterline.extras import DISTRIBUTION, EXTRA_OF

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# import name -> the distribution that brings it
DISTRIBUTION_OF = {"dagster": "dagster", "airflow": "apache-airflow", "starlette": "starlette",
                   "uvicorn": "uvicorn", "confluent_kafka": "confluent-kafka", "plotly": "plotly"}


def _names(requirements: list[str]) -> set[str]:
    return {re.match(r"[A-Za-z0-9_.\-]+", r).group(0).lower() for r in requirements}


def _run(code: str, blocked: list[str]) -> subprocess.CompletedProcess:
    prelude = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in blocked)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)


def test_each_extra_brings_the_imports_its_adapter_checks_for():
    extras = {name: _names(reqs) for name, reqs in PYPROJECT["optional-dependencies"].items()}
    for module, extra in EXTRA_OF.items():
        assert DISTRIBUTION_OF[module] in extras[extra], f"[{extra}] lacks {DISTRIBUTION_OF[module]} ({module})"
    assert PYPROJECT["name"] == DISTRIBUTION


def test_the_core_requires_no_extra():
    core = _names(PYPROJECT["dependencies"])
    assert not core & set(DISTRIBUTION_OF.values()), core & set(DISTRIBUTION_OF.values())


def test_waterline_and_its_cli_load_with_every_extra_missing():
    proc = _run("""
        import waterline, waterline.cli, waterline.feed
        from waterline.cli import main
        try:
            main(["--help"])
        except SystemExit as exc:
            assert exc.code in (0, None), exc.code
        print(waterline.__version__)
    """, blocked=list(EXTRA_OF))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ingest" in proc.stdout and "release" in proc.stdout


@pytest.mark.parametrize("module, blocked, extra", [
    ("waterline.dagster", ["dagster"], "dagster"),
    ("waterline.dagster", ["plotly"], "dagster"),
    ("waterline.airflow", ["airflow"], "airflow"),
])
def test_an_adapter_without_its_extra_names_it(module, blocked, extra):
    proc = _run(f"""
        try:
            import {module}
        except ImportError as exc:
            print(exc)
    """, blocked=blocked)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == f"{module} needs the [{extra}] extra: pip install '{DISTRIBUTION}[{extra}]'"


@pytest.mark.parametrize("argv, blocked, feature, extra", [
    (["share", "serve", "feed.yaml"], ["uvicorn"], "waterline share serve", "sharing"),
    (["demo", "--stream"], ["confluent_kafka"], "waterline demo --stream", "kafka"),
])
def test_a_command_without_its_extra_says_which_to_install_in_one_line(argv, blocked, feature, extra):
    proc = _run(f"""
        from waterline.cli import main
        main({argv!r})
    """, blocked=blocked)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        f"error: {feature} needs the [{extra}] extra: pip install '{DISTRIBUTION}[{extra}]'"]


def test_the_cli_names_the_extra_of_any_missing_import_of_one():
    proc = _run("""
        from waterline.extras import missing_extra
        try:
            import plotly.graph_objects
        except ImportError as exc:
            print(missing_extra(exc, "--html"))
    """, blocked=["plotly"])
    assert proc.stdout.strip() == f"--html needs the [reports] extra: pip install '{DISTRIBUTION}[reports]'"
