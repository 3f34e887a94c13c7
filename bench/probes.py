"""Measurement helpers: wall time, phase timings of engine steps, driver JVM memory, load."""

from __future__ import annotations

import inspect
import os
import statistics
import sys
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

    A target is a module (``"waterline.engine.ingest.ingest"``: its module-level
    functions, as that module calls them) or a class in a module
    (``"waterline.engine.delta.table_log:TableLog"``: its instance methods, wherever
    they are called from while the phases are active). Context managers (e.g.
    `commit_state`, whose block is the Delta write) are timed from enter to exit.
    A name the target does not define is left out and listed in ``missing`` (and
    on stderr), so a renamed engine function shows up instead of silently
    dropping out of the phase timings.
    """

    def __init__(self, targets: dict[str, list[str]], context_managers: dict[str, list[str]] | None = None):
        self.totals: dict[str, float] = defaultdict(float)
        self.calls: dict[str, list[float]] = defaultdict(list)  # each call's seconds, by label
        self.labels: list[str] = []  # in the order given
        self._patches = []
        self.missing: list[str] = []
        for target, names in targets.items():
            owner, prefix = _resolve(target)
            for name in names:
                fn = _own_attr(owner, name)
                if callable(fn):
                    self.labels.append(f"{prefix}.{name}")
                    self._patches.append((owner, name, fn, self._wrap(self.labels[-1], fn)))
                else:
                    self.missing.append(f"{target}.{name}")
        for target, names in (context_managers or {}).items():
            owner, prefix = _resolve(target)
            for name in names:
                fn = _own_attr(owner, name)
                if callable(fn):
                    self.labels.append(f"{prefix}.{name}(block)")
                    self._patches.append((owner, name, fn, self._wrap_cm(self.labels[-1], fn)))
                else:
                    self.missing.append(f"{target}.{name}")
        if self.missing:
            print(f"[bench] phases not timed (no longer in the engine): {', '.join(self.missing)}",
                  file=sys.stderr, flush=True)

    def _wrap(self, label: str, fn: Callable):
        def wrapped(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                seconds = time.perf_counter() - t0
                self.totals[label] += seconds
                self.calls[label].append(seconds)

        return wrapped

    def _wrap_cm(self, label: str, fn: Callable):
        @contextmanager
        def wrapped(*a, **k):
            t0 = time.perf_counter()
            try:
                with fn(*a, **k) as v:
                    yield v
            finally:
                seconds = time.perf_counter() - t0
                self.totals[label] += seconds
                self.calls[label].append(seconds)

        return wrapped

    @contextmanager
    def active(self) -> Iterator[dict[str, float]]:
        self.totals, self.calls = defaultdict(float), defaultdict(list)
        for mod, name, _, wrapped in self._patches:
            setattr(mod, name, wrapped)
        try:
            yield self.totals
        finally:
            for mod, name, original, _ in self._patches:
                setattr(mod, name, original)


def _resolve(target: str):
    """``module`` or ``module:Class`` -> (the object to patch, its label prefix)."""
    import importlib

    modname, _, cls = target.partition(":")
    mod = importlib.import_module(modname)
    return (getattr(mod, cls), cls) if cls else (mod, modname.rsplit(".", 1)[1])


def _own_attr(owner, name: str):
    """``owner.name`` if it is a plain function of the module, or defined on the class itself
    (not a classmethod/staticmethod, which plain wrapping would unbind)."""
    if isinstance(owner, type):
        fn = owner.__dict__.get(name)
        return fn if inspect.isfunction(fn) else None
    return getattr(owner, name, None)


_FEED_TABLES = "waterline.engine.tables.feed_tables"  # the JVM-free reads of a feed's tables (states, file statistics)
RELEASE_PHASES = Phases(
    {
        "waterline.engine.release.release": [
            "target_waterline", "read_delta", "plan_step", "candidate_scope", "tier_outlook",
            "_apply", "desired_rows", "_merge", "_merge_metrics", "record_state", "stage", "commit_staged",
        ],
        # the one-commit path: files staged with Spark, then the commit without it
        "waterline.engine.release.prestage": ["_stage_tier", "_stage_small", "_stage_inserts", "_write_files", "stage_tier"],
        "waterline.engine.release.step_files": ["stage_tier", "adds", "removes", "written_files"],
        "waterline.engine.release.prestaged": ["commit_staged", "still_valid", "tier_conflicts", "write_commit"],
        "waterline.engine.delta.commit": ["checkpoint_if_due"],  # write_commit's own, after the release's last tier
        _FEED_TABLES: ["held_state", "tier_state", "held_files", "committed_version"],
    },
    {"waterline.engine.release.release": ["commit_state"]},
)
INGEST_PHASES = Phases(
    {
        "waterline.engine.ingest.ingest": [
            "_read", "read_output_and_unparsed", "check_columns", "check_schema", "parse_event_time",
            "compile_tiers", "profile", "profile_checking_duplicates", "observed_profile", "check_duplicates",
            "_write_quarantine", "_commit", "_record_moved", "ensure_tier_tables",
        ],
        # the held append: files written by Spark, one commit without it
        "waterline.engine.ingest.held_append": ["direct_unsupported", "write", "check_keys", "commit"],
        "waterline.engine.ingest.versions": ["tagged", "diff", "version_counts", "observed_counts"],
        _FEED_TABLES: ["held_state", "last_ingest_state", "partitions", "committed_version"],
    },
    {"waterline.engine.ingest.ingest": ["commit_state"]},
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
