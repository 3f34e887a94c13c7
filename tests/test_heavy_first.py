"""The suite's own scheduling (tests/scheduling.py `heavy_first`): what each xdist worker gets first."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.scheduling import heavy_first


def _items(modules: dict[str, tuple[int, float | None]]) -> list:
    """Fake collected items: ``modules`` maps a module name to (its test count, heavy cost or None)."""
    out = []
    for name, (count, cost) in modules.items():
        marker = pytest.mark.heavy(cost).mark if cost is not None else None
        for i in range(count):
            out.append(SimpleNamespace(module=SimpleNamespace(__name__=name), nodeid=f"{name}::t{i}",
                                       get_closest_marker=lambda _name, m=marker: m))
    return out


def test_each_workers_slice_opens_with_its_balanced_share_of_heavy_modules():
    items = _items({"a": (10, None), "modes": (1, 15), "b": (7, None), "kills": (2, 13), "diff": (3, 8),
                    "c": (20, None), "dags": (1, 6), "d": (5, None)})
    out = heavy_first(items, 2)
    assert sorted(i.nodeid for i in out) == sorted(i.nodeid for i in items)
    first, second = out[: len(out) // 2], out[len(out) // 2:]  # xdist's first split of 2 workers
    names = [[i.module.__name__ for i in part] for part in (first, second)]
    assert names[0][:2] == ["modes", "dags"] and names[1][:5] == ["kills", "kills", "diff", "diff", "diff"]
    assert {n for part in names for n in part if n in "abcd"} == set("abcd")
    for part in names:  # light modules keep their order
        light = [n for n in part if n in "abcd"]
        assert light == sorted(light)


def test_nothing_moves_without_heavy_modules_or_a_second_worker():
    items = _items({"a": (3, None), "b": (2, None)})
    assert heavy_first(items, 2) == items
    heavy = _items({"a": (3, None), "modes": (1, 15)})
    assert heavy_first(heavy, 1) == heavy
