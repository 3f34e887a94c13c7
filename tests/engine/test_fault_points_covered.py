"""Every named fault point (`waterline.engine.core.faults.POINTS`) is killed at by a crash test.

The points a crash test kills at are read from the crash test modules' own parametrizations
(a value ``point`` or ``point@n``), so a boundary added to `faults` without a test that kills
there fails the suite, and so does a test case dropped that was the only one of its point."""

from __future__ import annotations

import importlib
import inspect
import sys

import pytest

from waterline.engine.core import faults

#: The modules whose tests kill a real process at a named point and then check the next run.
CRASH_MODULES = ("tests.engine.test_crash", "tests.streams.test_stream_crash", "tests.engine.test_apply_crash")


def _values(obj) -> list:
    """Every value in a parametrize argvalues list, tuples and `pytest.param` sets flattened."""
    if isinstance(obj, (list, tuple)):
        return [v for item in obj for v in _values(item)]
    if hasattr(obj, "values") and hasattr(obj, "marks"):  # a pytest.param(...)
        return _values(list(obj.values))
    return [obj]


def killed_points(module_name: str) -> dict[str, list[str]]:
    """Point -> the tests of ``module_name`` that kill at it (from their parametrize marks)."""
    module = importlib.import_module(module_name)
    found: dict[str, list[str]] = {}
    for name, test in inspect.getmembers(module, inspect.isfunction):
        if not name.startswith("test_"):
            continue
        for mark in getattr(test, "pytestmark", []):
            if mark.name != "parametrize":
                continue
            for value in _values(list(mark.args[1])):
                if isinstance(value, str) and value.partition("@")[0] in faults.POINTS:
                    found.setdefault(value.partition("@")[0], []).append(name)
    return found


def test_every_named_fault_point_is_killed_at_by_a_crash_test():
    covered: set[str] = set()
    for module_name in CRASH_MODULES:
        covered |= set(killed_points(module_name))
    missing = [p for p in faults.POINTS if p not in covered]
    assert not missing, f"no crash test kills at {missing}: add a case to {CRASH_MODULES}"


def test_the_collector_finds_the_points_of_a_parametrize_mark():
    """The collector is not vacuous: it reads ``point@n`` values and pytest.param values."""
    @pytest.mark.parametrize("point", [f"{faults.CREATE_TIER_AFTER}@2", pytest.param(faults.CHECKPOINT_AFTER)])
    def test_x(point):  # pragma: no cover  (only inspected)
        pass

    module = type(importlib)("fake_crash_module")
    module.test_x = test_x
    sys.modules["fake_crash_module"] = module
    try:
        assert set(killed_points("fake_crash_module")) == {faults.CREATE_TIER_AFTER, faults.CHECKPOINT_AFTER}
    finally:
        del sys.modules["fake_crash_module"]
