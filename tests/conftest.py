"""Shared fixtures: one Spark session per test process, temp warehouses."""

from __future__ import annotations

import pytest

from tests.jvm import finish_class_archive, long_lived_jvm, start_class_archive, use_short_lived_drivers

# the fault proxy (tests/faults, tests/streams); each test's CPU (tests/cputime.py); heavy
# modules first in a parallel run (tests/scheduling.py)
pytest_plugins = ["tests.faults.fixtures", "tests.cputime", "tests.scheduling"]

use_short_lived_drivers()  # every Spark driver a test starts in a subprocess (tests/jvm.py)


def pytest_configure(config):
    """The drivers' class archive (tests/jvm.py) is built once per machine, by the main
    process, beside the first tests."""
    if not hasattr(config, "workerinput"):
        config.stash[_ARCHIVE] = start_class_archive()


@pytest.fixture(scope="session")
def spark():
    from waterline.engine.spark.session import get_session

    with long_lived_jvm():  # this process's session serves the whole run
        session = get_session()
    yield session
    session.stop()


_USES_SPARK = pytest.StashKey[bool]()
_ARCHIVE = pytest.StashKey[object]()


def pytest_collection_modifyitems(config, items):
    config.stash[_USES_SPARK] = any("spark" in item.fixturenames or item.get_closest_marker("spark")
                                    for item in items)


@pytest.fixture(scope="session", autouse=True)
def _own_session_first(request):
    """This process's session starts before any test: a test that starts one itself (a
    Dagster run in this process, a `waterline.Feed`) would start it with the short-lived
    flags (tests/jvm.py), and every later test here would share that JVM."""
    if request.config.stash.get(_USES_SPARK, False):
        request.getfixturevalue("spark")


@pytest.fixture(scope="session")
def s3proxy(tmp_path_factory):
    """A real S3 server (s3proxy, filesystem backend) on 127.0.0.1 with one bucket.

    While it runs, the process's AWS environment (AWS_ENDPOINT_URL, keys, region)
    points at it, so `waterline.engine.delta.storage`, ``deltalake`` and Spark sessions
    (or subprocesses) started after it reach it. Stopped at the end of the session.
    """
    from tests.s3proxy import S3Proxy, restore_env, set_env

    server = S3Proxy.start(tmp_path_factory.mktemp("s3proxy"))
    saved = set_env(server.env)
    try:
        yield server
    finally:
        restore_env(saved)
        server.stop()


@pytest.fixture(scope="session")
def s3_spark(spark, s3proxy):
    """The test Spark session, set to reach ``s3proxy`` (session-level s3a conf)."""
    from waterline.engine.delta import storage

    for key, value in storage.session_conf().items():
        spark.conf.set(key, value)
    return spark


# -- how busy the machine was: whether more pytest workers could overlap more waiting --------

_CPU_AT_START: tuple[float, int, int, int] | None = None


def _machine_cpu() -> tuple[int, int, int] | None:
    """(busy, stolen, idle) jiffies of every core since boot (Linux), else None. Stolen time
    (a virtual machine's host running others) is neither ours nor idle: reported apart."""
    try:
        with open("/proc/stat") as fh:
            values = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    values += [0] * (8 - len(values))
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user]
    busy = values[0] + values[1] + values[2] + values[5] + values[6]
    return busy, values[7], values[3] + values[4]


def pytest_sessionstart(session):
    global _CPU_AT_START
    import time

    if not hasattr(session.config, "workerinput") and (cpu := _machine_cpu()) is not None:
        _CPU_AT_START = (time.monotonic(), *cpu)


def pytest_terminal_summary(terminalreporter):
    """One line: the share of the machine's CPU time that was busy over the run (every
    process: the workers, their JVMs, servers) and stolen by a VM host, to size
    TEST_WORKERS against waiting."""
    import os
    import time

    if (builder := terminalreporter.config.stash.get(_ARCHIVE, None)) is not None:
        terminalreporter.write_line(finish_class_archive(builder))
    end = _machine_cpu()
    if _CPU_AT_START is None or end is None:
        return
    started, busy0, stolen0, idle0 = _CPU_AT_START
    busy, stolen, idle = end[0] - busy0, end[1] - stolen0, end[2] - idle0
    total = busy + stolen + idle
    if total <= 0:
        return
    ticks = os.sysconf("SC_CLK_TCK")
    terminalreporter.write_line(
        f"machine CPU over the run: {100 * busy / total:.0f}% busy, {100 * stolen / total:.0f}% stolen by the host, "
        f"on {os.cpu_count()} cores ({busy / ticks / 60:.1f} core-minutes busy in "
        f"{(time.monotonic() - started) / 60:.1f} minutes)")
