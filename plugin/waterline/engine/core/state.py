"""The waterline state that rides in every Delta commit: typed, versioned, JSON.

Each commit waterline makes to a feed's held or tier table carries that table's
whole state (``commitInfo.userMetadata`` and, where log cleanup could lose it,
the table property ``waterline.state``). `HeldState` and `TierState` are the two
shapes; `to_json`/`from_json` are the only way in and out, so a field can never
be misspelt as a dict key. The JSON keys are the ones waterline has always
written; ``v`` is the schema version, absent in states written before it (read
as version 1). A state from a newer waterline is refused, never half-read.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from waterline.errors import WaterlineError

SCHEMA_VERSION = 1
_VERSION_KEY = "v"


def _check_version(data: Mapping[str, Any], what: str) -> None:
    version = data.get(_VERSION_KEY, 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise WaterlineError(
            f"{what}: waterline state schema v{version} is newer than this waterline's (v{SCHEMA_VERSION}); "
            "upgrade waterline to read this table"
        )


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class SourceMark:
    """Event-mode bookkeeping of one source: its greatest event time, and when it last brought data."""

    max_event_us: int
    last_seen_us: int

    def to_json(self) -> dict[str, int]:
        return {"max_event_us": self.max_event_us, "last_seen_us": self.last_seen_us}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SourceMark:
        return cls(max_event_us=int(data["max_event_us"]), last_seen_us=int(data["last_seen_us"]))


@dataclass(frozen=True)
class HeldState:
    """The held table's state after a commit.

    ``seq`` is the ingest sequence of the newest append and ``n`` the table's
    waterline commit number (the Delta transaction version of data commits that
    are not appends). ``event_w``/``sources`` are the event-mode waterline. The
    ingest fields (``partition``, ``versions``, ``min_tau``, ``fingerprint``)
    describe the commit that wrote this state when ``op == "ingest"``. ``policies`` names,
    per tier whose schedule columns `waterline apply` recomputed, the normalised policy they
    were computed under (a tier absent from it has the schedule of the applied spec it was
    ingested under); every later commit carries it on, and so ``rescheduled`` (see
    `reconciles`).
    """

    seq: int = 0
    n: int = 0
    event_w: int | None = None
    sources: Mapping[str, SourceMark] = field(default_factory=dict)
    op: str | None = None
    partition: str | None = None
    versions: int = 0
    min_tau: Mapping[str, int | None] = field(default_factory=dict)
    fingerprint: str | None = None
    token: str | None = None
    policies: Mapping[str, str] = field(default_factory=dict)
    rescheduled: Mapping[str, int] = field(default_factory=dict)

    def evolve(self, **changes: Any) -> HeldState:
        """A copy with ``changes`` (the state of the next commit)."""
        return replace(self, **changes)

    def reconciles(self, tier: str, state: TierState) -> bool:
        """Whether ``tier`` (now at ``state``) was not released since `apply` rescheduled its
        versions in held (``rescheduled``: the tier's commit number then): its next release
        recomputes every identity, since a version's schedule may have moved before W_T.
        A hold or resume since then keeps it so (at worst one more full release)."""
        n = self.rescheduled.get(tier)
        return n is not None and state.n >= n and (state.n == n or state.op != "release")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            _VERSION_KEY: SCHEMA_VERSION, "seq": self.seq, "n": self.n, "event_w": self.event_w,
            "sources": {name: mark.to_json() for name, mark in self.sources.items()},
        }
        if self.op is not None:
            out["op"] = self.op
        if self.op == "ingest":
            out.update(partition=self.partition, versions=self.versions, min_tau=dict(self.min_tau),
                       fingerprint=self.fingerprint)
        if self.token is not None:
            out["token"] = self.token
        if self.policies:
            out["policies"] = dict(self.policies)
        if self.rescheduled:
            out["rescheduled"] = dict(self.rescheduled)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str = "held table") -> HeldState:
        _check_version(data, where)
        return cls(
            seq=int(data.get("seq") or 0), n=int(data.get("n") or 0), event_w=_optional_int(data.get("event_w")),
            sources={name: SourceMark.from_json(mark) for name, mark in (data.get("sources") or {}).items()},
            op=data.get("op"), partition=data.get("partition"), versions=int(data.get("versions") or 0),
            min_tau={t: _optional_int(v) for t, v in (data.get("min_tau") or {}).items()},
            fingerprint=data.get("fingerprint"), token=data.get("token"),
            policies={str(t): str(p) for t, p in (data.get("policies") or {}).items()},
            rescheduled={str(t): int(n) for t, n in (data.get("rescheduled") or {}).items()},
        )


@dataclass(frozen=True)
class TierState:
    """A tier table's state after a commit: W_T and what it was released from.

    ``w`` is W_T (None before the first release), ``seq`` the held ingest
    sequence applied, ``next_due`` the next instant after W_T at which a held
    version changes the tier (None: none known), ``pending`` the versions not
    yet taken over at W_T, ``n`` the table's waterline commit number, ``spec`` the applied
    spec version the release was released under (`waterline.engine.tables.applied_spec`;
    None: written before waterline recorded it, or by a feed with no recorded version).
    """

    tier: str | None = None
    w: int | None = None
    seq: int = 0
    hold: bool = False
    next_due: int | None = None
    pending: int = 0
    n: int = 0
    op: str | None = None
    token: str | None = None
    spec: int | None = None

    def evolve(self, **changes: Any) -> TierState:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        return {_VERSION_KEY: SCHEMA_VERSION, **{k: v for k, v in out.items() if v is not None or k in _TIER_KEPT}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str = "tier table") -> TierState:
        _check_version(data, where)
        return cls(
            tier=data.get("tier"), w=_optional_int(data.get("w")), seq=int(data.get("seq") or 0),
            hold=bool(data.get("hold", False)), next_due=_optional_int(data.get("next_due")),
            pending=int(data.get("pending") or 0), n=int(data.get("n") or 0), op=data.get("op"),
            token=data.get("token"), spec=_optional_int(data.get("spec")),
        )


# Keys written even when None: readers of older waterlines expect them present.
_TIER_KEPT = frozenset({"w", "next_due"})
