"""Each tier's expected lag, declared to Dagster as a freshness policy.

A tier whose policy is a plain delay (``event_time + INTERVAL 15 MINUTES <=
WATERLINE()``) is expected to be at most that delay behind its feed; ``TRUE``
is expected at once. Other policies (embargoes, windows, mixed branches) take
the spec's ``freshness_lag_seconds``, or declare nothing. The declared window
adds a margin for the release cadence (sensor interval + lead time, at least a
minute), so a tier whose releases stop shows as failing freshness in the UI.
"""

from __future__ import annotations

import re
from datetime import timedelta
from dagster import FreshnessPolicy

from waterline.spec import FeedSpec

_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_DELAY = re.compile(
    r"^\s*`?(?P<col>\w+)`?\s*\+\s*INTERVAL\s+'?(?P<n>\d+)'?\s+(?P<unit>SECOND|MINUTE|HOUR|DAY)S?\s*<=?\s*WATERLINE\s*\(\s*\)\s*$",
    re.IGNORECASE,
)


def expected_lag_seconds(spec: FeedSpec, tier: str) -> int | None:
    """The plain delay of the tier's policy, else the spec's ``freshness_lag_seconds``, else None."""
    policy = spec.tiers[tier]
    if policy.strip().upper() == "TRUE":
        return 0
    match = _DELAY.match(policy)
    if match and match["col"].lower() == spec.event_time.lower():
        return int(match["n"]) * _UNITS[match["unit"].lower()]
    return spec.freshness_lag_seconds


def margin_seconds(spec: FeedSpec) -> int:
    """Release cadence allowance added to the expected lag."""
    return max(60, 2 * spec.release_interval_seconds + spec.release_lead_seconds)


def tier_freshness_policy(spec: FeedSpec, tier: str) -> FreshnessPolicy | None:
    """``FreshnessPolicy.time_window(fail_window = lag + margin)``, or None when no lag is known."""
    lag = expected_lag_seconds(spec, tier)
    if lag is None:
        return None
    return FreshnessPolicy.time_window(fail_window=timedelta(seconds=lag + margin_seconds(spec)))
