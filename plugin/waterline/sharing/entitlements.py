"""The entitlement trail: every change to who may read what, as events in an append-only Delta table.

Beside the token store (``<warehouse>/_wl_sharing/entitlements`` for the default store), written
without Spark (`waterline.engine.delta.event_table`), so several `waterline share` commands and
servers, on several machines, append to one trail. Events:

* ``token_created``: recipient, token id, expiry (a token's expiry is known when it is made, so
  no event is needed when it passes: `entitled_at` applies it);
* ``token_revoked``: recipient, token id;
* ``audiences``: a feed's ``audiences`` as a server started serving it, or as `token create`
  read them (JSON ``{recipient: [tiers]}``).

A token's creation is recorded before the token is stored and its revocation after, so a
failure between the two can only make the trail say a recipient could read more than it
could, never less. `entitled_at` answers "who could read which tier at that instant": a
recipient with a live token then, for the tiers the feed's audiences last recorded before
then give it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from waterline.engine.delta import storage
from waterline.engine.delta.event_table import EventTable

TABLE = "entitlements"
CREATED, REVOKED, AUDIENCES = "token_created", "token_revoked", "audiences"

SCHEMA = pa.schema([
    ("at", pa.timestamp("us", tz="UTC")),
    ("event", pa.string()),
    ("recipient", pa.string()),
    ("token_id", pa.string()),
    ("expires", pa.timestamp("us", tz="UTC")),
    ("feed", pa.string()),
    ("audiences", pa.string()),
])


def trail_path(store_where: str) -> str:
    """Where the trail of the token store at ``store_where`` (a file path or an S3 URI) lives:
    the folder ``entitlements`` beside it."""
    return storage.beside(store_where, TABLE)


def _instant(us: int | None) -> datetime | None:
    return None if us is None else datetime.fromtimestamp(us / 1_000_000, UTC)


class EntitlementTrail:
    """The trail at ``path``: record events, replay them."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._table = EventTable(path, SCHEMA, description="waterline entitlement trail")

    def token_created(self, recipient: str, token_id: str, *, at_ms: int, expires_ms: int | None) -> None:
        self._table.append([{"at": _instant(at_ms * 1000), "event": CREATED, "recipient": recipient,
                             "token_id": token_id, "expires": _instant(None if expires_ms is None else expires_ms * 1000)}])

    def tokens_revoked(self, revoked: Iterable[tuple[str, str]], *, at_ms: int) -> None:
        """``revoked``: (recipient, token id) pairs."""
        self._table.append([{"at": _instant(at_ms * 1000), "event": REVOKED, "recipient": r, "token_id": t}
                            for r, t in revoked])

    def audiences(self, feeds: Mapping[str, Mapping[str, Sequence[str]]], *, at_ms: int) -> None:
        """``feeds``: each feed's audiences (recipient -> tiers) as now in force."""
        self._table.append([{"at": _instant(at_ms * 1000), "event": AUDIENCES, "feed": feed,
                             "audiences": json.dumps({r: list(t) for r, t in sorted(a.items())}, sort_keys=True)}
                            for feed, a in sorted(feeds.items())])

    def events(self) -> list[dict[str, Any]]:
        """Every event, oldest first (µs instants)."""
        rows = self._table.read().to_pylist()
        for row in rows:
            for key in ("at", "expires"):
                row[key] = None if row[key] is None else int(row[key].timestamp() * 1_000_000)
        return sorted(rows, key=lambda r: (r["at"], r["event"] != AUDIENCES))


@dataclass(frozen=True)
class Entitlement:
    """What one recipient could read of one feed at an instant, and through which tokens."""

    feed: str
    recipient: str
    tiers: tuple[str, ...]
    tokens: tuple[str, ...]  # live token ids then


class Replay:
    """The trail's events applied in order (oldest first), so that who is entitled can be
    asked at successive instants without replaying the trail from its start each time."""

    def __init__(self, events: Sequence[Mapping[str, Any]]) -> None:
        self._events, self._next = events, 0
        self._live: dict[str, dict[str, int | None]] = {}  # recipient -> token id -> expiry
        self._audiences: dict[str, dict[str, list[str]]] = {}

    def entitled_at(self, at_us: int) -> list[Entitlement]:
        """`entitled_at` for ``at_us``, which must not be before the last instant asked."""
        while self._next < len(self._events) and self._events[self._next]["at"] <= at_us:
            self._apply(self._events[self._next])
            self._next += 1
        out = []
        for feed, by_recipient in sorted(self._audiences.items()):
            for recipient, tiers in sorted(by_recipient.items()):
                tokens = tuple(sorted(t for t, expires in self._live.get(recipient, {}).items()
                                      if expires is None or at_us < expires))
                if tokens and tiers:
                    out.append(Entitlement(feed=feed, recipient=recipient, tiers=tuple(tiers), tokens=tokens))
        return out

    def _apply(self, e: Mapping[str, Any]) -> None:
        if e["event"] == CREATED:
            self._live.setdefault(e["recipient"], {})[e["token_id"]] = e["expires"]
        elif e["event"] == REVOKED:
            self._live.get(e["recipient"], {}).pop(e["token_id"], None)
        elif e["event"] == AUDIENCES:
            self._audiences[e["feed"]] = json.loads(e["audiences"])


def entitled_at(events: Sequence[Mapping[str, Any]], at_us: int) -> list[Entitlement]:
    """Who could read which tier of which feed at ``at_us``: recipients holding a live token
    (created, not revoked, not expired by then), for the tiers the feed's audiences last
    recorded at or before then give them. Sorted by feed and recipient."""
    return Replay(events).entitled_at(at_us)


def now_ms() -> int:
    return int(time.time() * 1000)
