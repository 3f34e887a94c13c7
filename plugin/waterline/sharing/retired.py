"""Tiers a feed retired: no longer served, refused with their own message.

docs/semantics.md, "When the spec changes": a retired tier (one an earlier applied spec
version named and the applied one does not) is no longer released and no longer served; its
table stays until an explicit drop. The applied versions are the feed's ``_wl_specs`` table
(`FeedSpec.specs_path`), read here with the Delta room's `TableLog` (the sharing server never
reads the feed's log room). A request costs one read of the next commit file, absent but after
an apply (as a tier's snapshot, `waterline.sharing.tables`): the table is read again only then.
Like a tier table, ``_wl_specs`` is not deleted and re-created under a running server.
"""

from __future__ import annotations

import json
import threading

from waterline.engine.delta.objects import read_object
from waterline.engine.delta.table_log import TableLog, commit_path
from waterline.sharing import protocol as P
from waterline.spec import FeedSpec
from waterline.spec.release_part import retired_by


class RetiredTiers:
    """Per served feed, its retired tiers (name -> the spec version that retired it)."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[int, dict[str, int]]] = {}
        self._lock = threading.Lock()

    def of(self, spec: FeedSpec) -> dict[str, int]:
        """``spec``'s retired tiers, by the applied spec versions (none recorded: none)."""
        path = spec.specs_path
        with self._lock:
            known = self._known.get(path)
        if known is not None and read_object(commit_path(path, known[0] + 1)) is None:
            return known[1]
        log = TableLog.open(path)
        if not log.exists or log.version is None:
            return {}
        retired = retired_tiers(log.to_arrow(["version", "release_part"]).to_pylist())
        with self._lock:
            self._known[path] = (log.version, retired)
        return retired

    def refuse(self, spec: FeedSpec, tier: str) -> None:
        """Raise the retired tier's own refusal if ``tier`` is one of ``spec``'s."""
        version = self.of(spec).get(tier)
        if version is not None:
            raise P.retired(tier, version)


def retired_tiers(rows: list[dict]) -> dict[str, int]:
    """From ``_wl_specs`` rows (``version``, ``release_part`` JSON): each tier an earlier version
    named that the newest does not, with the version that retired it."""
    return retired_by((row["version"], json.loads(row["release_part"])) for row in rows)


__all__ = ["RetiredTiers", "retired_tiers"]
