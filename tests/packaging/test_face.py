"""The Python face as a user learns it: every type a `Feed` method returns is exported from
`waterline`; ``as_of`` means one thing (a point on the waterline's axis); durations are
seconds or timedeltas (an int ``max_wait`` is still µs, with a DeprecationWarning);
``Feed.audit`` is the deprecated name of `Feed.audit_current`; a `Feed` used in ``with``
stops the Spark session it started, and only that one."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap
import typing
from contextlib import AbstractContextManager
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

import waterline
import waterline.feed
from tests.engine.feedkit import spec_dict, write_partition
from waterline import Feed, WaterlineError, load
from waterline.feed import _max_wait_us

REPO = Path(__file__).resolve().parents[2]
#: what a method may return that is not waterline's to export
FOREIGN = {pa.Table, Path, str, int, float, bool, type(None), dict, list, tuple, AbstractContextManager}
ROW = {"event_time": "2026-01-05T10:00:00", "status": "ok", "embargo_until": None, "v": "x"}


def _classes(annotation) -> set[type]:
    if isinstance(annotation, type):
        return {annotation}
    return {cls for arg in typing.get_args(annotation) for cls in _classes(arg)}


def test_every_type_a_feed_method_returns_is_exported_from_waterline():
    namespace = {**vars(waterline.feed), "SparkSession": pa.Table}  # pyspark's own type is not ours to export
    checked = 0
    for name, member in inspect.getmembers(Feed):
        if name.startswith("_"):
            continue
        function = member.fget if isinstance(member, property) else member
        if not callable(function):
            continue
        annotation = inspect.signature(function).return_annotation
        assert annotation is not inspect.Signature.empty, f"Feed.{name} has no return annotation"
        if isinstance(annotation, str):
            annotation = eval(annotation, namespace)  # noqa: S307 - the module's own annotation text
        for cls in _classes(annotation) - FOREIGN:
            assert getattr(waterline, cls.__name__, None) is cls, f"Feed.{name} returns {cls.__name__}, not exported"
            assert cls.__name__ in waterline.__all__, cls.__name__
            checked += 1
    assert checked >= 15, checked


def test_durations_are_seconds_or_timedeltas_and_an_int_max_wait_is_deprecated_microseconds():
    assert _max_wait_us(1.5) == 1_500_000
    assert _max_wait_us(timedelta(minutes=2)) == 120_000_000
    assert _max_wait_us("5 minutes") == 300_000_000
    with pytest.warns(DeprecationWarning, match="microseconds"):
        assert _max_wait_us(2_000_000) == 2_000_000
    with pytest.raises(WaterlineError, match="^release: max_wait: "):
        _max_wait_us("soon")


def _spec_file(root: Path) -> Path:
    for number, partition in enumerate(("a", "b"), start=1):
        write_partition(root, partition, [{**ROW, "id": number, "event_time": f"2026-01-05T1{number}:00:00"}])
    path = root / "f.yaml"
    path.write_text(yaml.safe_dump(spec_dict(root, {"all": "TRUE", "late": "event_time <= WATERLINE()"})))
    return path


@pytest.mark.spark
def test_as_of_is_one_point_and_a_feed_leaves_a_session_it_did_not_start(spark, tmp_path):
    path = _spec_file(tmp_path)
    with Feed(load(path).spec, spark=spark) as feed:
        feed.ingest("a")
        feed.ingest("b")
        feed.release(as_of="2026-01-05T11:30:00Z")
        first = feed.read("late")
        feed.release(as_of="2026-01-05T12:30:00Z")
        # read(as_of=t) shows what release(as_of=t) published
        assert feed.read("late", as_of="2026-01-05T11:30:00Z").column("id").to_pylist() == [1]
        assert first.column("id").to_pylist() == [1]
        assert sorted(feed.read("late", as_of="2026-01-05T12:30:00Z").column("id").to_pylist()) == [1, 2]
        assert feed.audit_current(["late"])["late"].violations == 0
        with pytest.warns(DeprecationWarning, match="audit_current"):
            assert set(feed.audit()) == {"all", "late"}
    assert spark.range(3).count() == 3  # handed in: not stopped
    with load(path) as found:  # the process's running session: found, not started, not stopped
        assert found.status().tiers["late"].w_us is not None
        found.spark  # noqa: B018
    assert spark.range(3).count() == 3


OWN_SESSION = textwrap.dedent("""
    import json, sys
    from pyspark import SparkContext
    import waterline

    with waterline.load(sys.argv[1]) as feed:
        feed.ingest("a")
        started = feed.spark_started and SparkContext._active_spark_context is not None
    print(json.dumps({"started": started, "after": SparkContext._active_spark_context is not None,
                      "feed_after": feed.spark_started}))
""")


@pytest.mark.spark
def test_a_feed_in_with_stops_the_session_it_started(tmp_path):
    path = _spec_file(tmp_path)
    proc = subprocess.run([sys.executable, "-c", OWN_SESSION, str(path)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"started": True, "after": False, "feed_after": False}
