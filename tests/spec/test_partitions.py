from __future__ import annotations

from datetime import datetime

import pytest

from waterline.spec import PartitionScheme, SpecError, spec_from_dict


def scheme(body, minimal):
    minimal["partitions"] = body
    if "hourly" in body:
        minimal["source"]["path"] = "data/{date}/{hour}"
    return spec_from_dict(minimal).partitions


def test_daily_keys_inclusive(minimal):
    daily = scheme({"daily": {"start": "2026-01-30", "end": "2026-02-02"}}, minimal)
    assert daily.keys() == ["2026-01-30", "2026-01-31", "2026-02-01", "2026-02-02"]
    assert daily.keys("2026-01-31", "2026-01-31") == ["2026-01-31"]
    assert daily.keys(last="2026-01-31") == ["2026-01-30", "2026-01-31"]


def test_hourly_keys_cross_midnight(minimal):
    hourly = scheme({"hourly": {"start": "2026-01-01-22:00"}}, minimal)
    assert hourly.keys("2026-01-01-22:00", "2026-01-02-01:00") == [
        "2026-01-01-22:00", "2026-01-01-23:00", "2026-01-02-00:00", "2026-01-02-01:00",
    ]
    assert hourly.key_for(datetime(2026, 1, 2, 1, 59)) == "2026-01-02-01:00"


def test_hourly_start_written_as_date(minimal):
    assert scheme({"hourly": {"start": "2026-01-01"}}, minimal).start == "2026-01-01-00:00"


def test_static_keys(minimal):
    static = scheme({"static": ["eu", "us", 2024]}, minimal)
    assert static.keys() == ["eu", "us", "2024"]
    assert static.keys("us") == ["us", "2024"]
    assert static.validate("eu") == "eu"
    with pytest.raises(SpecError, match=r"^spec ticks: partition asia: not one of the static partitions"):
        static.validate("asia")


def test_open_ended_range_needs_last(minimal):
    daily = scheme({"daily": {"start": "2026-01-01"}}, minimal)
    with pytest.raises(SpecError, match=r"open-ended"):
        daily.keys()


@pytest.mark.parametrize(
    "kind, key, reason",
    [
        ("daily", "2026-1-5", "not a daily partition key (expected YYYY-MM-DD)"),
        ("daily", "2026-02-30", "not a valid daily partition key (no such date or hour)"),
        ("daily", "2025-12-31", "before the first partition 2026-01-01"),
        ("daily", "2026-02-01", "after the last partition 2026-01-31"),
        ("hourly", "2026-01-05", "not a hourly partition key (expected YYYY-MM-DD-HH:00)"),
        ("hourly", "2026-01-05-10:30", "not a hourly partition key (expected YYYY-MM-DD-HH:00)"),
        ("hourly", "2026-01-05-24:00", "not a valid hourly partition key (no such date or hour)"),
    ],
)
def test_validate_names_the_key(kind, key, reason):
    end = "2026-01-31" if kind == "daily" else None
    start = "2026-01-01" if kind == "daily" else "2026-01-01-00:00"
    partitions = PartitionScheme(kind=kind, start=start, end=end, origin="spec f.yaml")
    with pytest.raises(SpecError) as err:
        partitions.validate(key)
    assert str(err.value) == f"spec f.yaml: partition {key}: {reason}"


def test_reversed_range(minimal):
    daily = scheme({"daily": {"start": "2026-01-01"}}, minimal)
    with pytest.raises(SpecError, match=r"partition 2026-01-05: comes after 2026-01-03"):
        daily.keys("2026-01-05", "2026-01-03")


def test_round_trip_to_dict(minimal):
    for body in ({"daily": {"start": "2026-01-01", "end": "2026-01-03"}}, {"static": ["a", "b"]}):
        assert scheme(body, dict(minimal)).to_dict() == body
