"""The release part of a feed spec: the keys that decide what is published and when.

docs/semantics.md, "When the spec changes": a change to these keys takes effect only through
`waterline apply`; a change to any other key (sources, transform, spark, maintenance,
audiences, a partition scheme's start or end, ...) takes effect without it. The part is
plain JSON, so that the applied spec can be recorded in the warehouse and compared with a
spec file without Spark; :func:`spec_hash` is its fingerprint.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

import sqlglot

from waterline.spec.columns import output_columns
from waterline.spec.model import FeedSpec

#: Keys whose change is refused even by `apply` (docs/semantics.md says why).
REFUSED = ("key", "event_time", "partitions", "partition_by")


@functools.lru_cache(maxsize=256)
def normal_policy(text: str) -> str:
    """A policy as sqlglot prints it back: reformatting a policy changes nothing."""
    try:
        return sqlglot.parse_one(text, read="spark").sql(dialect="spark")
    except sqlglot.errors.ParseError:
        return " ".join(text.split())


def release_part(spec: FeedSpec) -> dict[str, Any]:
    """The release part of ``spec`` as JSON-able data (``columns``: None when the spec does
    not name its output columns without Spark)."""
    known = output_columns(spec)
    wl = spec.waterline
    return {
        "tiers": {name: normal_policy(policy) for name, policy in spec.tiers.items()},
        "columns": None if known.names is None else {c: known.type_of(c) for c in known.names},
        "key": list(spec.key),
        "event_time": spec.event_time,
        "partitions": spec.partitions.kind,
        "partition_by": spec.partition_by,
        "timezone": spec.timezone,
        "waterline": {"mode": wl.mode, "lateness_us": wl.lateness_us,
                      "idle_after_us": None if wl.idle_after is None else int(wl.idle_after.total_seconds() * 1e6)},
    }


def spec_hash(part: Mapping[str, Any]) -> str:
    """The fingerprint of a release part: sha256 of its canonical JSON."""
    return hashlib.sha256(json.dumps(part, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class SpecDiff:
    """What changed from the applied release part to a spec file's."""

    tiers_added: tuple[str, ...] = ()
    tiers_retired: tuple[str, ...] = ()
    policies_changed: tuple[tuple[str, str, str], ...] = ()  # (tier, applied, file)
    columns_added: tuple[str, ...] = ()
    columns_removed: tuple[str, ...] = ()
    columns_retyped: tuple[tuple[str, str, str], ...] = ()  # (column, applied, file)
    keys_changed: tuple[tuple[str, Any, Any], ...] = field(default=())  # other keys: (key, applied, file)

    def __bool__(self) -> bool:
        return bool(self.lines())

    @property
    def refused(self) -> tuple[str, ...]:
        """The changes `apply` refuses, one line each."""
        out = [f"{k} changed ({a} -> {b}): identity or partitioning would change under published rows; "
               "publish it as a new feed" for k, a, b in self.keys_changed if k in REFUSED]
        out += [f"column {c} removed: older versions and published rows hold it; keep it (or produce NULL)"
                for c in self.columns_removed]
        return tuple(out)

    def lines(self) -> list[str]:
        """Each change, one line, as `waterline plan` prints them."""
        out = [f"tier {t} added" for t in self.tiers_added]
        out += [f"tier {t} retired" for t in self.tiers_retired]
        out += [f"tier {t}: policy {a!r} -> {b!r}" for t, a, b in self.policies_changed]
        out += [f"column {c} added" for c in self.columns_added]
        out += [f"column {c} removed" for c in self.columns_removed]
        out += [f"column {c}: {a} -> {b}" for c, a, b in self.columns_retyped]
        out += [f"{k}: {a} -> {b}" for k, a, b in self.keys_changed]
        return out

    def summary(self) -> str:
        """The changes on one line."""
        return "; ".join(self.lines())


def spec_diff(applied: Mapping[str, Any], current: Mapping[str, Any]) -> SpecDiff:
    """The difference between the applied release part and ``current`` (a spec file's)."""
    old_t, new_t = applied["tiers"], current["tiers"]
    old_c, new_c = applied.get("columns"), current.get("columns")
    columns = old_c is not None and new_c is not None  # unknown on either side: checked at ingest
    others = [k for k in applied if k not in ("tiers", "columns")]
    return SpecDiff(
        tiers_added=tuple(t for t in new_t if t not in old_t),
        tiers_retired=tuple(t for t in old_t if t not in new_t),
        policies_changed=tuple((t, old_t[t], new_t[t]) for t in new_t if t in old_t and old_t[t] != new_t[t]),
        columns_added=tuple(c for c in new_c if c not in old_c) if columns else (),
        columns_removed=tuple(c for c in old_c if c not in new_c) if columns else (),
        columns_retyped=tuple((c, old_c[c], new_c[c]) for c in new_c
                              if c in old_c and old_c[c] != new_c[c]) if columns else (),
        keys_changed=tuple((k, applied[k], current.get(k)) for k in others if applied[k] != current.get(k)),
    )


__all__ = ["REFUSED", "SpecDiff", "normal_policy", "release_part", "spec_diff", "spec_hash"]
