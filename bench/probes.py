"""Measurement helpers: wall time, phase timings of engine steps, driver JVM memory, load."""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Callable, Iterator


def median(xs):
    return statistics.median(xs) if xs else None


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


class Phases:
    """Time named functions of engine modules by wrapping them (the engine is not modified).

    Names that a module does not define are ignored, so this survives engine refactors.
    Context managers (e.g. `commit_state`, whose block is the Delta write) are timed
    from enter to exit.
    """

    def __init__(self, targets: dict[str, list[str]], context_managers: dict[str, list[str]] | None = None):
        self.totals: dict[str, float] = defaultdict(float)
        self._patches = []
        import importlib

        for modname, names in targets.items():
            mod = importlib.import_module(modname)
            for name in names:
                fn = getattr(mod, name, None)
                if callable(fn):
                    self._patches.append((mod, name, fn, self._wrap(f"{modname.rsplit('.', 1)[1]}.{name}", fn)))
        for modname, names in (context_managers or {}).items():
            mod = importlib.import_module(modname)
            for name in names:
                fn = getattr(mod, name, None)
                if callable(fn):
                    label = f"{modname.rsplit('.', 1)[1]}.{name}(block)"
                    self._patches.append((mod, name, fn, self._wrap_cm(label, fn)))

    def _wrap(self, label: str, fn: Callable):
        def wrapped(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.totals[label] += time.perf_counter() - t0

        return wrapped

    def _wrap_cm(self, label: str, fn: Callable):
        @contextmanager
        def wrapped(*a, **k):
            t0 = time.perf_counter()
            try:
                with fn(*a, **k) as v:
                    yield v
            finally:
                self.totals[label] += time.perf_counter() - t0

        return wrapped

    @contextmanager
    def active(self) -> Iterator[dict[str, float]]:
        self.totals = defaultdict(float)
        for mod, name, _, wrapped in self._patches:
            setattr(mod, name, wrapped)
        try:
            yield self.totals
        finally:
            for mod, name, original, _ in self._patches:
                setattr(mod, name, original)


RELEASE_PHASES = Phases(
    {
        "waterline.engine.release": [
            "held_state", "tier_state", "read_held_files", "candidate_partitions", "_outlook",
            "_apply", "_merge", "_merge_metrics", "record_state", "table_exists", "table_version",
        ],
    },
    {"waterline.engine.release": ["commit_state"]},
)
INGEST_PHASES = Phases(
    {
        "waterline.engine.ingest": [
            "held_state", "read_output", "check_schema", "compile_tiers", "profile", "profile_checking_duplicates",
            "last_ingest_state",
            "check_duplicates", "held_partitions", "_versions", "_version_counts", "_write_quarantine",
            "_commit", "ensure_tier_tables",
        ],
    },
    {"waterline.engine.ingest": ["commit_state"]},
)


class DriverMemory:
    """Peak memory of the driver JVM during a block.

    * heap: sum over the JVM's heap pools of their peak usage since the block
      started (`MemoryPoolMXBean.resetPeakUsage/getPeakUsage`), after a full GC
      at the start so every block starts from the live set;
    * rss: the resident set of the `java` child of this Python process, sampled
      every 20 ms by a thread (psutil); reported as the peak and the growth.
    """

    def __init__(self, spark):
        import psutil

        self._jvm = spark.sparkContext._jvm
        me = psutil.Process()
        javas = [p for p in me.children(recursive=True) if "java" in (p.name() or "").lower()]
        self._proc = javas[0] if javas else None

    def rss(self) -> int | None:
        return self._proc.memory_info().rss if self._proc else None

    def heap_used(self) -> int:
        rt = self._jvm.java.lang.Runtime.getRuntime()
        return int(rt.totalMemory() - rt.freeMemory())

    def _heap_pools(self):
        mf = self._jvm.java.lang.management.ManagementFactory
        return [p for p in mf.getMemoryPoolMXBeans() if str(p.getType().name()) == "HEAP"]

    @contextmanager
    def measure(self) -> Iterator[dict]:
        out: dict = {}
        self._jvm.java.lang.System.gc()
        pools = self._heap_pools()
        for p in pools:
            p.resetPeakUsage()
        out["heap_live_before"] = self.heap_used()
        rss0 = self.rss()
        peak = [rss0 or 0]
        stop = threading.Event()

        def sample():
            while not stop.wait(0.02):
                r = self.rss()
                if r and r > peak[0]:
                    peak[0] = r

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        try:
            yield out
        finally:
            stop.set()
            thread.join()
            out["heap_peak"] = sum(int(p.getPeakUsage().getUsed()) for p in pools)
            out["old_gen_peak"] = sum(
                int(p.getPeakUsage().getUsed()) for p in pools if "old" in str(p.getName()).lower()
            )
            out["rss_before"] = rss0
            out["rss_peak"] = peak[0]
            out["rss_growth"] = (peak[0] - rss0) if rss0 else None


_JAVA = []  # the driver JVM (psutil.Process), set by `track_jvm`


def track_jvm(spark) -> None:
    """Find the driver JVM among this process's children, for CPU accounting."""
    import psutil

    spark.sparkContext  # the JVM is started by now
    _JAVA[:] = [p for p in psutil.Process().children(recursive=True) if "java" in (p.name() or "").lower()][:1]


def _cpu() -> float:
    """CPU seconds used so far by this Python process and the driver JVM (user + system)."""
    import psutil

    total = 0.0
    for p in [psutil.Process(), *_JAVA]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


@contextmanager
def timed() -> Iterator[dict]:
    """Wall seconds (`s`) and CPU seconds of the driver JVM + Python (`cpu_s`) of the block.

    On a shared machine the wall time grows with other load; CPU time much less so.
    """
    out: dict = {}
    c0 = _cpu()
    t0 = time.perf_counter()
    try:
        yield out
    finally:
        out["s"] = time.perf_counter() - t0
        out["cpu_s"] = _cpu() - c0


_GROUP = [0]


@contextmanager
def spark_jobs(spark) -> Iterator[dict]:
    """Count the Spark jobs, stages and tasks the block runs (via a job group and the status tracker)."""
    sc = spark.sparkContext
    _GROUP[0] += 1
    group = f"waterline-bench-{_GROUP[0]}"
    sc.setJobGroup(group, group)
    out: dict = {}
    try:
        yield out
    finally:
        tracker = sc.statusTracker()
        jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(group)]
        stages = [s for j in jobs if j for s in j.stageIds]
        infos = [tracker.getStageInfo(s) for s in stages]
        out["jobs"] = len(jobs)
        out["stages"] = len(stages)
        out["tasks"] = sum(i.numTasks for i in infos if i)
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
