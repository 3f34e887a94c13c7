"""What must run without a JVM loads no pyspark: checked in a fresh interpreter each.

The release sensor and the Airflow trigger poll often, and `Feed.plan/status/read/due`
answer from the Delta logs alone; none of them may import pyspark (which would be one
step from starting a JVM). The import contract (test_imports.py) checks the static
imports; these children check what actually gets loaded, lazy imports and all.
"""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

import importlib
import tomllib

FORBIDDEN = ("pyspark", "py4j", "delta")  # delta: delta-spark's Python package, which imports pyspark

# The child leaves with os._exit once it has printed: deltalake's Rust runtime and pyarrow's
# thread pools are torn down in no fixed order at interpreter exit, which now and then aborts
# ("terminate called without an active exception", delta-io/delta-rs#2184) after the work is
# done; what this test checks is printed before that.
CHECK = textwrap.dedent(f"""
    import json, os, sys
    loaded = sorted(name for name in {FORBIDDEN!r} if name in sys.modules)
    print("\\n" + json.dumps({{"loaded": loaded, "result": globals().get("result")}}), flush=True)
    os._exit(0)
""")


def _submodules(package) -> list[str]:
    return [package.__name__] + sorted(
        info.name for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + ".")
    )


def _run_child(code: str, tmp_path: Path, *args: str) -> dict:
    """Run ``code`` then CHECK in a fresh interpreter (cwd and AIRFLOW_HOME in ``tmp_path``,
    so nothing lands in the repository or the home folder); returns CHECK's JSON."""
    env = dict(os.environ, AIRFLOW_HOME=str(tmp_path / "airflow_home"), AIRFLOW__CORE__LOAD_EXAMPLES="False")
    done = subprocess.run([sys.executable, "-c", code + CHECK, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"child failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def _jvm_free_engine_modules() -> list[str]:
    """The engine's modules the `no-jvm-modules` import contract lists (packages expanded), so the
    static contract and this runtime check name the same modules."""
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    contract = next(c for c in pyproject["tool"]["importlinter"]["contracts"] if c["id"] == "no-jvm-modules")
    names: list[str] = []
    for name in contract["source_modules"]:
        if not name.startswith("waterline.engine."):
            continue
        module = importlib.import_module(name)
        names += _submodules(module) if hasattr(module, "__path__") else [name]
    return names


IMPORT_TARGETS = [
    "waterline",
    "waterline.cli",
    *_jvm_free_engine_modules(),
    "waterline.dagster.sensors",
    "waterline.airflow.triggers",
]


@pytest.mark.parametrize("module", IMPORT_TARGETS)
def test_import_loads_no_pyspark(module, tmp_path):
    child = _run_child(f"import {module}\n", tmp_path)
    assert child["loaded"] == [], f"`import {module}` loaded {child['loaded']}"


# -- Feed's JVM-free methods, on a real feed ------------------------------------------------

EVENTS = ["2026-01-05T10:00:00", "2026-01-05T10:10:00", "2026-01-05T10:50:00"]
RELEASED_AT = "2026-01-05T11:00:00Z"
# At 11:00 the realtime tier has all three; delayed_15m the two whose event_time + 15 min
# has passed (10:15, 10:25); the third is due at 11:05.
EXPECTED_ROWS = {"realtime": 3, "delayed_15m": 2}


@pytest.fixture(scope="session")
def released_feed(spark, tmp_path_factory) -> Path:
    """A small feed, ingested and released with the test Spark session; returns its spec's path."""
    import waterline

    root = tmp_path_factory.mktemp("jvm_free_feed")
    source = root / "src" / "2026-01-05"
    source.mkdir(parents=True)
    source.joinpath("part-0.json").write_text(
        "".join(json.dumps({"id": i, "ts": ts, "v": f"row {i}"}) + "\n" for i, ts in enumerate(EVENTS)))
    spec = {
        "feed": "nojvm",
        "warehouse": str(root / "wh"),
        "source": {"format": "json", "path": str(root / "src" / "{partition}"),
                   "options": {"schema": "id BIGINT, ts STRING, v STRING"}},
        "partitions": {"daily": {"start": "2026-01-05"}},
        "transform": "SELECT id, CAST(ts AS TIMESTAMP) AS event_time, v FROM source",
        "key": ["id"],
        "event_time": "event_time",
        "tiers": {"realtime": "TRUE", "delayed_15m": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"},
    }
    path = root / "nojvm.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    feed = waterline.load(path, spark=spark)
    feed.ingest("2026-01-05")
    feed.release(as_of=RELEASED_AT)
    return path


FEED_METHODS = textwrap.dedent("""
    import sys
    import waterline
    from waterline.clock import format_instant

    feed = waterline.load(sys.argv[1])
    plan = feed.plan()
    status = feed.status()
    due = feed.due()
    result = {
        "plan": sorted(plan.plans),
        "rows": {tier: feed.read(tier).num_rows for tier in feed.tiers},
        "rows_as_of": {tier: feed.read(tier, as_of=sys.argv[2]).num_rows for tier in feed.tiers},
        "status": {name: [format_instant(tier.w_us), tier.pending] for name, tier in status.tiers.items()},
        "exists": status.exists,
        "due_type": type(due).__name__,
        "spark_started": feed.spark_started,
    }
""")


@pytest.mark.spark  # the fixture ingests and releases with the test session
def test_feed_jvm_free_methods_load_no_pyspark(released_feed, tmp_path):
    child = _run_child(FEED_METHODS, tmp_path, str(released_feed), RELEASED_AT)
    assert child["loaded"] == [], f"Feed.plan/status/read/due loaded {child['loaded']}"
    result = child["result"]
    assert result["plan"] == ["delayed_15m", "realtime"]
    assert result["rows"] == result["rows_as_of"] == EXPECTED_ROWS
    assert result["status"] == {"realtime": [RELEASED_AT, 0], "delayed_15m": [RELEASED_AT, 1]}
    assert result["exists"] is True
    assert result["due_type"] == "DueMoments"
    assert result["spark_started"] is False
