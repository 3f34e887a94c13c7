"""The CPU each test cost: its process tree's CPU seconds (Linux), the slowest by CPU at the end.

`make test` is CPU-bound (both cores busy), so the tests that cost the most CPU, not the
longest by wall clock, are what makes a run long: a test waiting on a due instant lets the
other worker run. Each worker samples, once a second and at each test's start and end, the
CPU time of every process descending from it (its own JVM, CLI drivers, servers, daemons)
and charges the increase to the test running. A process that outlives its parent (a JVM
whose Python driver exited) is charged until the parent exits. Written to
``test-artifacts/test-cpu.tsv``; the 25 costliest are printed after pytest's durations.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "test-artifacts" / "test-cpu.tsv"
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class _Tree:
    """The CPU seconds used by this process and its descendants since it was made."""

    def __init__(self) -> None:
        self.root = os.getpid()
        self.seen: dict[tuple[int, str], float] = {}
        self.total = 0.0
        self.lock = threading.Lock()
        self.sample()

    def sample(self) -> float:
        with self.lock:
            parents, cpu = {}, {}
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/stat") as fh:
                        stat = fh.read()
                except OSError:
                    continue
                fields = stat[stat.rindex(")") + 2:].split()
                pid = int(entry)
                parents[pid] = int(fields[1])
                cpu[(pid, fields[19])] = (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime; starttime
            for (pid, start), seconds in cpu.items():
                node, hops = pid, 0
                while node not in (self.root, 0, 1) and hops < 64:
                    node, hops = parents.get(node, 0), hops + 1
                if node == self.root:
                    self.total += seconds - self.seen.get((pid, start), 0.0)
                    self.seen[(pid, start)] = seconds
            return self.total


class CpuPerTest:
    """The worker's side (a sampler thread, each test's CPU on its teardown report) and the
    main process's (collecting the reports, printing and writing the table)."""

    def __init__(self, config) -> None:
        self.config = config
        self.costs: list[tuple[float, str]] = []
        self.tree: _Tree | None = None
        self.started: dict[str, float] = {}
        # The tests run in workers (each samples its own tree) or, without xdist, here.
        runs_tests = hasattr(config, "workerinput") or getattr(config.option, "dist", "no") == "no"
        if runs_tests and os.path.isdir("/proc"):
            self.tree = _Tree()
            threading.Thread(target=self._sampler, daemon=True, name="cpu-per-test").start()

    def _sampler(self) -> None:
        while True:  # a daemon thread: ends with the process
            time.sleep(1.0)
            self.tree.sample()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item) -> None:
        if self.tree is not None:
            self.started[item.nodeid] = self.tree.sample()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if call.when == "teardown" and self.tree is not None and item.nodeid in self.started:
            report.user_properties.append(("cpu_s", self.tree.sample() - self.started.pop(item.nodeid)))

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "teardown":
            for name, value in report.user_properties:
                if name == "cpu_s":
                    self.costs.append((value, report.nodeid))

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if hasattr(self.config, "workerinput") or not self.costs:
            return
        self.costs.sort(reverse=True)
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text("cpu_s\ttest\n" + "".join(f"{cpu:.1f}\t{nodeid}\n" for cpu, nodeid in self.costs))
        total = sum(cpu for cpu, _ in self.costs)
        terminalreporter.write_sep("=", f"costliest tests by CPU (their process trees; {total / 60:.1f} core-minutes "
                                        f"in all, every test in {REPORT.relative_to(REPO)})")
        for cpu, nodeid in self.costs[:25]:
            terminalreporter.write_line(f"{cpu:8.1f} core-s  {nodeid}")


def pytest_configure(config) -> None:
    config.pluginmanager.register(CpuPerTest(config), "waterline-cpu-per-test")
