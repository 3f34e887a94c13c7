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
from typing import Any, Iterable, Mapping

import sqlglot

from waterline.clock import format_instant
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
    def tiers_scheduled_anew(self) -> tuple[str, ...]:
        """The tiers whose schedule the change computes anew: added, or with a changed policy."""
        return (*self.tiers_added, *(t for t, _, _ in self.policies_changed))

    @property
    def refused(self) -> tuple[str, ...]:
        """The changes `apply` refuses, one line each."""
        out = [f"{k} changed ({a} -> {b}): identity or partitioning would change under published rows; "
               "publish it as a new feed" for k, a, b in self.keys_changed if k in REFUSED]
        out += [f"column {c} removed: older versions and published rows hold it; keep it (or produce NULL)"
                for c in self.columns_removed]
        return tuple(out)

    def lines(self, counts: "ChangeCounts | None" = None) -> list[str]:
        """Each change, one line, as `waterline plan` prints them; with ``counts``, each
        followed by its consequences counted (`ChangeCounts`)."""
        c = counts or ChangeCounts()
        out = [f"tier {t} added" + c.added_text(t) for t in self.tiers_added]
        out += [f"tier {t} retired" + c.retired_text(t) for t in self.tiers_retired]
        out += [f"tier {t}: policy {a!r} -> {b!r}" + c.changed_text(t) for t, a, b in self.policies_changed]
        out += [f"column {col} added" + c.column_text(col) for col in self.columns_added]
        out += [f"column {c} removed" for c in self.columns_removed]
        out += [f"column {c}: {a} -> {b}" for c, a, b in self.columns_retyped]
        out += [f"{k}: {a} -> {b}" for k, a, b in self.keys_changed]
        return out

    def summary(self) -> str:
        """The changes on one line."""
        return "; ".join(self.lines())


@dataclass(frozen=True)
class TierCounts:
    """A new or changed tier's next release, counted over held at ``w_us`` (the W that release
    reaches at least: the feed's W, or the tier's W_T when it is ahead), as the engine computes
    it (`waterline.engine.release.plan_counts`).

    ``due``: versions the tier does not show now and shows at ``w_us`` (a new tier: every row of
    its first release); ``withdrawn``: identities it shows now and no longer at ``w_us`` (the new
    policy recalls them or their new expiry passed); ``kept``: rows shown now that only the kept
    rule shows at ``w_us`` (the new policy alone would not, or not yet); ``sooner``: rows shown
    now and still at ``w_us`` whose new expiry comes before their current one."""

    w_us: int
    due: int = 0
    withdrawn: int = 0
    kept: int = 0
    sooner: int = 0
    on_hold: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"w_us": self.w_us, "due": self.due, "withdrawn": self.withdrawn, "kept": self.kept,
                "sooner": self.sooner, "on_hold": self.on_hold}


def _rows(n: int, what: str = "") -> str:
    """``n`` rows, in words ("1 row", "1,204 shown rows")."""
    return f"{_n(n)} {what}{'row' if n == 1 else 'rows'}"


def _n(number: int) -> str:
    return f"{number:,}"


@dataclass(frozen=True)
class ChangeCounts:
    """A spec diff's consequences, counted (`waterline plan`). ``tiers``: new and changed
    tiers (Spark over held, read only); ``retired_rows``: each retired tier's table rows (its
    Delta log); ``column_tables``: column -> the tables that gain it. ``note``: why the
    Spark counts are missing (None: counted, or nothing needed them)."""

    tiers: Mapping[str, TierCounts] = field(default_factory=dict)
    retired_rows: Mapping[str, int | None] = field(default_factory=dict)
    column_tables: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    note: str | None = None

    def added_text(self, tier: str) -> str:
        t = self.tiers.get(tier)
        if t is None:
            return ""
        return f": built from held at W {format_instant(t.w_us)}, {_rows(t.due)} at its first release"

    def changed_text(self, tier: str) -> str:
        t = self.tiers.get(tier)
        if t is None:
            return ""
        parts = [f"{_n(t.due)} pending {'version becomes' if t.due == 1 else 'versions become'} due at once (at W {format_instant(t.w_us)}, "
                 + ("at its resume)" if t.on_hold else "its next release)")]
        if t.withdrawn:
            parts.append(f"{_rows(t.withdrawn, 'shown ')} withdrawn by it")
        if t.kept:
            parts.append(f"{_rows(t.kept, 'shown ')} kept that the new policy alone would not show")
        if t.sooner:
            parts.append(f"{_rows(t.sooner, 'shown ')} {'leaves at its' if t.sooner == 1 else 'leave at their'} new, earlier expiry")
        return ": " + ", ".join(parts)

    def retired_text(self, tier: str) -> str:
        if tier not in self.retired_rows:
            return ""
        rows = self.retired_rows[tier]
        if rows is None:
            return ": no table (never released)"
        return f": {_rows(rows)} in its table, kept until an explicit drop"

    def column_text(self, column: str) -> str:
        if column not in self.column_tables:
            return ""
        tables = self.column_tables[column]
        if not tables:
            return ": no table yet (created with it)"
        return f": {len(tables)} tables gain it, nullable ({', '.join(tables)})"

    def to_dict(self) -> dict[str, Any]:
        return {"tiers": {t: c.to_dict() for t, c in self.tiers.items()}, "retired_rows": dict(self.retired_rows),
                "column_tables": {c: list(t) for c, t in self.column_tables.items()}, "note": self.note}


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


def retired_by(versions: Iterable[tuple[int, Mapping[str, Any]]]) -> dict[str, int]:
    """From the applied versions (number, release part), each tier an earlier version named
    that the newest does not, with the version that retired it (a tier named again later is
    not retired; `apply` refuses that, but a hand-written history may hold it)."""
    out: dict[str, int] = {}
    named: set[str] = set()
    for number, part in sorted(versions, key=lambda v: v[0]):
        tiers = set(part["tiers"])
        out = {t: v for t, v in out.items() if t not in tiers}
        out.update({t: number for t in named - tiers if t not in out})
        named |= tiers
    return out


__all__ = ["REFUSED", "ChangeCounts", "SpecDiff", "TierCounts", "normal_policy", "release_part", "retired_by",
           "spec_diff", "spec_hash"]
