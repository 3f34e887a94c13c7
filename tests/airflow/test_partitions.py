"""`waterline.airflow.partitions`: which partitions a run ingests (pure: no Spark, no database)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from tests.airflow.home import REPO
from waterline.airflow.partitions import partitions_for_run, partitions_in_interval, utc_naive
from waterline.errors import WaterlineError
from waterline.spec import FeedSpec, PartitionScheme, load_spec

UTC = timezone.utc


@pytest.fixture(scope="module")
def ticks() -> FeedSpec:
    """The demo feed `ticks`: daily partitions from 2026-01-05."""
    return load_spec(REPO / "dags" / "feeds" / "ticks.yaml", base_dir=REPO)


def _run(run_type: str, conf: dict | None = None, **context) -> dict:
    """A task context as the operator gets it: only the keys `partitions_for_run` reads."""
    return {"dag_run": SimpleNamespace(run_type=SimpleNamespace(value=run_type), conf=conf or {}), **context}


@pytest.mark.parametrize(
    ("kind", "start", "end", "keys"),
    [
        ("daily", datetime(2026, 1, 5, tzinfo=UTC), datetime(2026, 1, 6, tzinfo=UTC), ["2026-01-05"]),
        ("daily", datetime(2026, 1, 5, tzinfo=UTC), datetime(2026, 1, 8, tzinfo=UTC),
         ["2026-01-05", "2026-01-06", "2026-01-07"]),
        # a manual run: an empty interval names the partition containing it
        ("daily", datetime(2026, 1, 6, 13, tzinfo=UTC), datetime(2026, 1, 6, 13, tzinfo=UTC), ["2026-01-06"]),
        ("hourly", datetime(2026, 1, 5, 3, tzinfo=UTC), datetime(2026, 1, 5, 5, tzinfo=UTC),
         ["2026-01-05-03:00", "2026-01-05-04:00"]),
    ],
)
def test_a_data_interval_maps_to_its_partitions(ticks, kind, start, end, keys):
    scheme = PartitionScheme(kind=kind, start="2026-01-01" if kind == "daily" else "2026-01-01-00:00")
    assert partitions_in_interval(replace(ticks, partitions=scheme), start, end) == keys


def test_an_interval_outside_the_scheme_or_a_static_scheme_is_one_clear_line(ticks):
    with pytest.raises(WaterlineError, match="before the first partition"):
        partitions_in_interval(ticks, datetime(2020, 1, 1, tzinfo=UTC), datetime(2020, 1, 2, tzinfo=UTC))
    static = replace(ticks, partitions=PartitionScheme(kind="static", values=("a", "b")))
    with pytest.raises(WaterlineError, match=r"static partitions do not follow time.*\['a', 'b'\]"):
        partitions_in_interval(static, datetime(2026, 1, 5, tzinfo=UTC), datetime(2026, 1, 6, tzinfo=UTC))


def test_an_interval_in_another_time_zone_is_read_in_utc(ticks):
    # New York midnight is 05:00 UTC: the one UTC day starting in [6th 00:00, 7th 00:00) EST is the 7th
    est = timezone(timedelta(hours=-5))
    start = datetime(2026, 1, 6, tzinfo=est)
    assert utc_naive(start) == datetime(2026, 1, 6, 5)
    assert partitions_in_interval(ticks, start, datetime(2026, 1, 7, tzinfo=est)) == ["2026-01-07"]
    assert utc_naive(datetime(2026, 1, 6, 5)) == datetime(2026, 1, 6, 5)  # naive: taken as UTC


def test_the_operators_argument_wins_then_the_run_conf(ticks):
    interval = {"data_interval_start": datetime(2026, 1, 9, tzinfo=UTC),
                "data_interval_end": datetime(2026, 1, 10, tzinfo=UTC)}
    context = _run("scheduled", {"partitions": ["2026-01-07"]}, **interval)
    assert partitions_for_run(ticks, context, "2026-01-05") == ["2026-01-05"]
    # in the order named, each once
    assert partitions_for_run(ticks, context, ["2026-01-06", "2026-01-05", "2026-01-06"]) == ["2026-01-06", "2026-01-05"]
    assert partitions_for_run(ticks, context) == ["2026-01-07"]
    assert partitions_for_run(ticks, _run("scheduled", {"partitions": "2026-01-08"}, **interval)) == ["2026-01-08"]


def test_a_manual_run_ingests_the_partition_of_its_logical_date_a_scheduled_one_its_interval(ticks):
    # Airflow infers a manual run's interval as the day before its logical date: not used
    manual = _run("manual", logical_date=datetime(2026, 1, 6, 12, tzinfo=UTC),
                  data_interval_start=datetime(2026, 1, 5, tzinfo=UTC), data_interval_end=datetime(2026, 1, 6, tzinfo=UTC))
    assert partitions_for_run(ticks, manual) == ["2026-01-06"]
    for run_type in ("scheduled", "backfill"):
        run = _run(run_type, logical_date=datetime(2026, 1, 5, tzinfo=UTC),
                   data_interval_start=datetime(2026, 1, 5, tzinfo=UTC), data_interval_end=datetime(2026, 1, 8, tzinfo=UTC))
        assert partitions_for_run(ticks, run) == ["2026-01-05", "2026-01-06", "2026-01-07"]
    # an Airflow enum-less run type (a plain string) reads the same
    plain = {**manual, "dag_run": SimpleNamespace(run_type="manual", conf=None)}
    assert partitions_for_run(ticks, plain) == ["2026-01-06"]


def test_a_bad_key_or_a_run_without_interval_is_one_line(ticks):
    with pytest.raises(WaterlineError, match=r"^partitions: .*2026-13-01"):
        partitions_for_run(ticks, _run("manual"), ["2026-13-01"])
    with pytest.raises(WaterlineError, match=r"no partitions given and the run has no data interval"):
        partitions_for_run(ticks, {"dag_run": None})
    static = replace(ticks, partitions=PartitionScheme(kind="static", values=("eu", "us")))
    assert partitions_for_run(static, _run("manual", {"partitions": ["us"]})) == ["us"]
    with pytest.raises(WaterlineError, match="static partitions do not follow time"):
        partitions_for_run(static, _run("scheduled", data_interval_start=datetime(2026, 1, 5, tzinfo=UTC),
                                        data_interval_end=datetime(2026, 1, 6, tzinfo=UTC)))
