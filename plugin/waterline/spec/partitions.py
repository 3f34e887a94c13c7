"""Partition schemes: daily, hourly or a static list of values.

Keys are strings. Daily keys are ``YYYY-MM-DD``; hourly keys are
``YYYY-MM-DD-HH:00``, Dagster's hourly format, so the same key names a Dagster
partition, a source folder and the ``_wl_partition`` column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from waterline.errors import SpecError

DAILY_FORMAT = "%Y-%m-%d"
HOURLY_FORMAT = "%Y-%m-%d-%H:%M"
PARTITION_KINDS = ("daily", "hourly", "static")

_DAILY_KEY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_HOURLY_KEY = re.compile(r"^\d{4}-\d{2}-\d{2}-\d{2}:00$")
_EXPECTED = {"daily": "YYYY-MM-DD", "hourly": "YYYY-MM-DD-HH:00"}


@dataclass(frozen=True)
class PartitionScheme:
    """How a feed is cut into partitions.

    ``start``/``end`` (inclusive, ``end`` optional) bound daily and hourly
    schemes; ``values`` lists a static scheme's keys in order.
    """

    kind: str
    start: str | None = None
    end: str | None = None
    values: tuple[str, ...] = ()
    # Where the scheme came from, for error messages ("spec dags/feeds/x.yaml").
    origin: str = field(default="spec", compare=False, repr=False)

    def validate(self, key: str) -> str:
        """Return ``key`` if it names a partition of this scheme, else raise SpecError."""
        if self.kind == "static":
            if key not in self.values:
                self._fail(key, f"not one of the static partitions {list(self.values)}")
            return key
        moment = self._parse(key)
        if self.start is not None and moment < self._parse(self.start):
            self._fail(key, f"before the first partition {self.start}")
        if self.end is not None and moment > self._parse(self.end):
            self._fail(key, f"after the last partition {self.end}")
        return key

    def keys(self, first: str | None = None, last: str | None = None) -> list[str]:
        """All keys from ``first`` to ``last`` inclusive, in order.

        ``first`` defaults to the scheme's start (or first value), ``last`` to
        its end (or last value); a time scheme without ``end`` needs ``last``.
        """
        if self.kind == "static":
            lo = self.values.index(self.validate(first)) if first is not None else 0
            hi = self.values.index(self.validate(last)) if last is not None else len(self.values) - 1
            if lo > hi:
                self._fail(first, f"comes after {last}")
            return list(self.values[lo : hi + 1])
        first = self.validate(first) if first is not None else self.start
        if last is None:
            if self.end is None:
                self._fail("<last>", "the partition range is open-ended (no `end`): give the last partition")
            last = self.end
        self.validate(last)
        current, stop = self._parse(first), self._parse(last)
        if current > stop:
            self._fail(first, f"comes after {last}")
        step = timedelta(days=1) if self.kind == "daily" else timedelta(hours=1)
        fmt = DAILY_FORMAT if self.kind == "daily" else HOURLY_FORMAT
        out = []
        while current <= stop:
            out.append(current.strftime(fmt))
            current += step
        return out

    def key_for(self, moment: datetime) -> str:
        """The daily or hourly key containing ``moment`` (its own wall clock)."""
        if self.kind == "daily":
            return moment.strftime(DAILY_FORMAT)
        if self.kind == "hourly":
            return moment.replace(minute=0, second=0, microsecond=0).strftime(HOURLY_FORMAT)
        raise SpecError(f"{self.origin}: partitions: static partitions have no key for a time")

    def to_dict(self) -> dict:
        if self.kind == "static":
            return {"static": list(self.values)}
        bounds = {"start": self.start}
        if self.end is not None:
            bounds["end"] = self.end
        return {self.kind: bounds}

    def _parse(self, key: str) -> datetime:
        pattern = _DAILY_KEY if self.kind == "daily" else _HOURLY_KEY
        fmt = DAILY_FORMAT if self.kind == "daily" else HOURLY_FORMAT
        if not isinstance(key, str) or not pattern.match(key):
            self._fail(key, f"not a {self.kind} partition key (expected {_EXPECTED[self.kind]})")
        try:
            return datetime.strptime(key, fmt)
        except ValueError:
            self._fail(key, f"not a valid {self.kind} partition key (no such date or hour)")
        raise AssertionError("unreachable")

    def _fail(self, key: object, reason: str) -> None:
        raise SpecError(f"{self.origin}: partition {key}: {reason}")


def normalise_time_key(kind: str, value: object) -> str:
    """Turn a YAML value (a ``date``, ``datetime`` or string) into a ``kind`` key.

    Hourly bounds may be written as a date (meaning 00:00) or ``YYYY-MM-DD HH:00``.
    Raises ValueError with the expected format.
    """
    if kind == "daily":
        if isinstance(value, datetime):
            raise ValueError(f"expected a date ({_EXPECTED[kind]}), got a date-time")
        if isinstance(value, date):
            return value.strftime(DAILY_FORMAT)
        if not isinstance(value, str) or not _DAILY_KEY.match(value.strip()):
            raise ValueError(f"expected a date {_EXPECTED[kind]}, got {value!r}")
        return _strptime(value.strip(), DAILY_FORMAT).strftime(DAILY_FORMAT)
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        candidates = (text, text.replace(" ", "-", 1), text.replace("T", "-", 1))
        moment = None
        for candidate in candidates:
            if _HOURLY_KEY.match(candidate):
                moment = _strptime(candidate, HOURLY_FORMAT)
                break
        if moment is None and _DAILY_KEY.match(text):
            moment = _strptime(text, DAILY_FORMAT)
        if moment is None:
            raise ValueError(f"expected an hour {_EXPECTED[kind]}, got {value!r}")
    else:
        raise ValueError(f"expected an hour {_EXPECTED[kind]}, got {value!r}")
    if (moment.minute, moment.second, moment.microsecond) != (0, 0, 0):
        raise ValueError(f"hourly partitions start on the hour, got {value!r}")
    return moment.strftime(HOURLY_FORMAT)


def _strptime(text: str, fmt: str) -> datetime:
    try:
        return datetime.strptime(text, fmt)
    except ValueError:
        raise ValueError(f"{text!r} is not a real date or hour") from None
