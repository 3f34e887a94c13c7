"""Release proofs kept past the time-travel window: ``<warehouse>/<feed>/_wl_proofs``.

A proof reads each release's rows from the tier's change data feed, whose files vacuum
deletes once they are ``maintenance.time_travel`` old, and commits Delta's log cleanup
drops. So `maintain` proves each tier's new commits before it vacuums, and keeps what it
found here: per tier, one row per proven commit (its `ReleaseProof` and up to
`MAX_KEPT_BREACHES` breached rows), one row per range it could not prove, and a ``through``
row, the newest version it examined. The audit takes commits up to ``through`` from here and
proves only the later ones from the change data feed.

An append-only event table (`EventTable`: written without Spark, any Delta reader reads it).
A proof is kept with the policy of its day, and the spec version that policy was (``spec``):
a policy changed later does not re-judge it. A table kept by an older waterline gains the
``spec`` column at the next keep (`EventTable` grows trailing nullable columns).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from waterline.engine.core.results import Breach, ReleaseProof, TierProof
from waterline.engine.delta import storage
from waterline.engine.delta.event_table import EventTable

TABLE = "_wl_proofs"
#: Breached rows kept per commit (its breach count is always whole).
MAX_KEPT_BREACHES = 100
RELEASE, UNPROVEN, THROUGH = "release", "unproven", "through"

SCHEMA = pa.schema([
    ("tier", pa.string()), ("kind", pa.string()), ("version", pa.int64()), ("last_version", pa.int64()),
    ("committed_us", pa.int64()), ("writer_us", pa.int64()), ("store_us", pa.int64()), ("w_us", pa.int64()),
    ("seq", pa.int64()), ("operation", pa.string()), ("inserted", pa.int64()), ("updated", pa.int64()),
    ("deleted", pa.int64()), ("min_margin_us", pa.int64()), ("breaches", pa.int64()),
    ("breached_rows", pa.string()), ("why", pa.string()), ("kept_at_us", pa.int64()),
    # added with issue 56 (a table kept before reads NULL: judged by the spec of its day)
    ("spec", pa.int64()),
])


def kept_proofs_path(feed_dir: str) -> str:
    return storage.join(feed_dir, TABLE)


@dataclass(frozen=True)
class KeptProof:
    """What was kept of a tier's proofs: every version up to ``through`` (-1: none) is in
    ``releases`` (those with something to prove), in an ``unproven`` range, or had nothing
    to prove."""

    through: int = -1
    releases: tuple[ReleaseProof, ...] = ()
    breaches: tuple[Breach, ...] = ()
    #: ``(first, last, why, by_us)``: ``by_us`` an instant the range's last commit had happened by
    unproven: tuple[tuple[int, int, str, int], ...] = ()

    def within(self, from_us: int | None, to_us: int | None) -> KeptProof:
        """The commits that committed in ``[from_us, to_us]``, and the unproven ranges that may
        reach into it (a range is named unless it certainly ended before ``from_us``)."""
        releases = tuple(r for r in self.releases if (from_us is None or r.committed_us >= from_us)
                         and (to_us is None or r.committed_us <= to_us))
        versions = {r.version for r in releases}
        return KeptProof(through=self.through, releases=releases,
                         breaches=tuple(b for b in self.breaches if b.version in versions),
                         unproven=tuple(u for u in self.unproven if from_us is None or u[3] >= from_us))


class KeptProofs:
    """The kept proofs of a feed's tiers, in the table at ``path``."""

    def __init__(self, path: str) -> None:
        self._table = EventTable(path, SCHEMA, description="waterline release proofs kept past time travel")

    def keep(self, proof: TierProof, *, through: int) -> int | None:
        """Append ``proof`` (its commits are the ones after the last kept ``through``) as one
        batch ending with the ``through`` row; the table version written."""
        now = int(time.time() * 1_000_000)
        rows = [_release_row(proof.tier, r, [b for b in proof.breaches if b.version == r.version], now)
                for r in proof.releases]
        for a, b, why in proof.unproven:
            # by when the range's last commit had happened: the next known commit's time, else now
            by = min((r.committed_us for r in proof.releases if r.version >= b), default=now)
            rows.append(dict(_blank(proof.tier, UNPROVEN, now), version=a, last_version=b, why=why, committed_us=by))
        rows.append(dict(_blank(proof.tier, THROUGH, now), version=through, last_version=through))
        return self._table.append(rows)

    def of(self, tier: str) -> KeptProof:
        """What is kept for ``tier``."""
        table = self._table.read()
        if table.num_rows == 0:
            return KeptProof()
        mine = table.filter(pc.equal(table["tier"], tier)).to_pylist()
        through = max((r["version"] for r in mine if r["kind"] == THROUGH), default=-1)
        releases, breaches = [], []
        for r in sorted((r for r in mine if r["kind"] == RELEASE and r["version"] <= through),
                        key=lambda r: r["version"]):
            releases.append(ReleaseProof(
                version=r["version"], committed_us=r["committed_us"], writer_us=r["writer_us"],
                store_us=r["store_us"], w_us=r["w_us"], seq=r["seq"], operation=r["operation"],
                inserted=r["inserted"], updated=r["updated"], deleted=r["deleted"],
                min_margin_us=r["min_margin_us"], breaches=r["breaches"], spec=r.get("spec")))
            breaches += [Breach(tier=tier, version=r["version"], key=tuple(b["key"]), seq=b["seq"],
                                change=b["change"], due_us=b["due_us"], committed_us=b["committed_us"],
                                w_us=b["w_us"]) for b in json.loads(r["breached_rows"] or "[]")]
        unproven = sorted((r["version"], r["last_version"], r["why"], r["committed_us"]) for r in mine
                          if r["kind"] == UNPROVEN and r["version"] <= through)
        return KeptProof(through=through, releases=tuple(_unique(releases)), breaches=tuple(breaches),
                         unproven=tuple(dict.fromkeys(unproven)))


def _unique(releases: Iterable[ReleaseProof]) -> list[ReleaseProof]:
    """One proof per version (a batch kept twice, after a lost answer, holds the same)."""
    return list({r.version: r for r in releases}.values())


def _blank(tier: str, kind: str, now: int) -> dict:
    return {name: None for name in SCHEMA.names} | {"tier": tier, "kind": kind, "kept_at_us": now}


def _release_row(tier: str, r: ReleaseProof, breaches: list[Breach], now: int) -> dict:
    rows = [{"key": list(b.key), "seq": b.seq, "change": b.change, "due_us": b.due_us,
             "committed_us": b.committed_us, "w_us": b.w_us} for b in breaches[:MAX_KEPT_BREACHES]]
    return dict(_blank(tier, RELEASE, now), version=r.version, last_version=r.version, committed_us=r.committed_us,
                writer_us=r.writer_us, store_us=r.store_us, w_us=r.w_us, seq=r.seq, operation=r.operation,
                inserted=r.inserted, updated=r.updated, deleted=r.deleted, min_margin_us=r.min_margin_us,
                breaches=r.breaches, breached_rows=json.dumps(rows, default=str) if rows else None, spec=r.spec)
