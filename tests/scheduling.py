"""Which tests each pytest-xdist worker gets first: modules marked ``heavy(core_minutes)``.

xdist's work stealing first hands each worker a contiguous, equal slice of the collected
tests, then moves tests from the end of a busy worker's queue to an idle one. A test of
10-15 CPU minutes that starts late in its slice ends the run on one worker while the
other idles; started first, the light tests fill around it and are what gets stolen.
"""

from __future__ import annotations


def pytest_collection_modifyitems(config, items):
    if hasattr(config, "workerinput"):  # every worker orders alike: xdist checks the collections match
        items[:] = heavy_first(items, int(config.workerinput["workercount"]))


def heavy_first(items: list, workers: int) -> list:
    """``items`` reordered so that each of ``workers`` contiguous, equal slices (how xdist's
    work stealing first hands out the run) starts with its share of the modules marked
    ``heavy(core_minutes)``, greedily balanced by that cost, whole modules kept together (their
    module fixtures set up once). A test of many CPU minutes that starts late in a slice ends
    the run on one worker while the other idles; started first, the light tests fill around it."""
    modules: dict[str, list] = {}
    for item in items:
        module = getattr(item, "module", None)  # None: not a Python test (a doctest file's, say)
        modules.setdefault(module.__name__ if module else item.nodeid, []).append(item)
    cost = {name: marker.args[0] for name, group in modules.items()
            if (marker := group[0].get_closest_marker("heavy")) is not None}
    if workers < 2 or not cost:
        return items
    bins: list[list] = [[] for _ in range(workers)]
    load = [0.0] * workers
    for name in sorted(cost, key=cost.__getitem__, reverse=True):
        i = load.index(min(load))
        bins[i] += modules[name]
        load[i] += cost[name]
    light = [item for name, group in modules.items() if name not in cost for item in group]
    out: list = []
    for i, chunk in enumerate(bins):
        size = (len(items) * (i + 1)) // workers - len(out)  # xdist's split: len(pending) // nodes left
        take = max(0, size - len(chunk))
        out += chunk + light[:take]
        light = light[take:]
    return out + light
