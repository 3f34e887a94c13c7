from __future__ import annotations

from datetime import timedelta

import pytest

from waterline.clock import duration_text as format_duration
from waterline.clock import parse_duration


@pytest.mark.parametrize(
    "text, expected",
    [
        ("30 seconds", timedelta(seconds=30)),
        ("15 minutes", timedelta(minutes=15)),
        ("1 day", timedelta(days=1)),
        ("2 hours", timedelta(hours=2)),
        ("500 ms", timedelta(milliseconds=500)),
        ("1 hour 30 minutes", timedelta(minutes=90)),
        ("1.5 hours", timedelta(minutes=90)),
        ("90s", timedelta(seconds=90)),
        ("1 WEEK", timedelta(weeks=1)),
        ("0 seconds", timedelta(0)),
    ],
)
def test_parse(text, expected):
    assert parse_duration(text) == expected


def test_bare_numbers_are_seconds():
    assert parse_duration("30") == parse_duration(30) == timedelta(seconds=30)


@pytest.mark.parametrize("text", ["", "soon", "30 fortnights", "-5 minutes"])
def test_parse_rejects(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("text", ["30 seconds", "15 minutes", "1 day", "2 hours", "500 milliseconds", "90 minutes", "0 seconds", "3 microseconds"])
def test_format_round_trips(text):
    assert format_duration(parse_duration(text)) == text
