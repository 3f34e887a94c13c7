"""The monthly usage report: per recipient and tier, what it was entitled to and what it read.

The shape an exchange's monthly declaration asks for, from the two tables beside the token
store: the entitlement trail (`waterline.sharing.entitlements`) says on which days a recipient
could read a tier, the access log (`waterline.sharing.access_records`) what it asked for and
was served. Days are UTC days; a recipient is entitled on a day when it was at any instant of it.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from waterline.errors import WaterlineError
from waterline.sharing.entitlements import Replay

DAY_US = 86_400_000_000


@dataclass(frozen=True)
class TierUsage:
    """One recipient's month on one tier of one feed."""

    feed: str
    tier: str
    recipient: str
    days_entitled: int = 0
    days_read: int = 0
    requests: int = 0  # answered table requests (status 200)
    rows: int = 0
    versions: int = 0  # distinct table versions served
    first_access_us: int | None = None
    last_access_us: int | None = None


@dataclass(frozen=True)
class UsageReport:
    """A month (``YYYY-MM``) of usage: rows per recipient and tier, totals per tier."""

    month: str
    start_us: int
    end_us: int
    rows: tuple[TierUsage, ...] = ()
    totals: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # "feed.tier" -> sums


def month_range(month: str) -> tuple[int, int]:
    """``YYYY-MM`` as ``[first instant, first instant of the next month)`` in µs, UTC."""
    m = re.fullmatch(r"(\d{4})-(\d{2})", month.strip())
    if not m or not 1 <= int(m.group(2)) <= 12:
        raise WaterlineError(f"--month: expected YYYY-MM, e.g. 2026-10, got {month!r}")
    year, mon = int(m.group(1)), int(m.group(2))
    start = datetime(year, mon, 1, tzinfo=UTC)
    end = start + timedelta(days=calendar.monthrange(year, mon)[1])
    return int(start.timestamp() * 1_000_000), int(end.timestamp() * 1_000_000)


def usage_report(month: str, feeds: Mapping[str, Iterable[str]], events: Sequence[Mapping[str, Any]],
                 access: Iterable[Mapping[str, Any]]) -> UsageReport:
    """The report for ``month`` over ``feeds`` (feed -> its tiers), from the entitlement trail's
    ``events`` (oldest first, µs instants) and the access records (``at`` in µs)."""
    start, end = month_range(month)
    entitled: dict[tuple[str, str, str], set[int]] = {}  # (feed, tier, recipient) -> days (index in month)
    replay, later = Replay(events), 0
    for day, day_start in enumerate(range(start, end, DAY_US)):
        # entitlements start only at events, so a day's are those at its start and at its events
        while later < len(events) and events[later]["at"] <= day_start:
            later += 1
        instants = [day_start]
        while later < len(events) and events[later]["at"] < day_start + DAY_US:
            instants.append(events[later]["at"])
            later += 1
        for at in instants:
            for e in replay.entitled_at(at):
                for tier in e.tiers:
                    if e.feed in feeds and tier in feeds[e.feed]:
                        entitled.setdefault((e.feed, tier, e.recipient), set()).add(day)
    reads: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for r in access:
        if not (start <= r["at"] < end) or r.get("status") != 200 or not r.get("table") or not r.get("recipient"):
            continue
        feed, _, tier = str(r["table"]).partition(".tiers.")
        if feed in feeds and tier in feeds[feed]:
            reads.setdefault((feed, tier, r["recipient"]), []).append(r)
    rows = []
    for key in sorted(set(entitled) | set(reads)):
        feed, tier, recipient = key
        got = reads.get(key, [])
        times = [r["at"] for r in got]
        rows.append(TierUsage(
            feed=feed, tier=tier, recipient=recipient, days_entitled=len(entitled.get(key, ())),
            days_read=len({(t - start) // DAY_US for t in times}), requests=len(got),
            rows=sum(int(r.get("rows") or 0) for r in got),
            versions=len({r.get("version") for r in got if r.get("version") is not None}),
            first_access_us=min(times, default=None), last_access_us=max(times, default=None)))
    totals: dict[str, dict[str, int]] = {}
    for u in rows:
        t = totals.setdefault(f"{u.feed}.{u.tier}", {"recipients_entitled": 0, "recipients_reading": 0,
                                                     "requests": 0, "rows": 0})
        t["recipients_entitled"] += u.days_entitled > 0
        t["recipients_reading"] += u.requests > 0
        t["requests"] += u.requests
        t["rows"] += u.rows
    return UsageReport(month=month, start_us=start, end_us=end, rows=tuple(rows), totals=totals)
