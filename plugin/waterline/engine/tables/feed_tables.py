"""A feed's tables as one handle: held, every tier and quarantine, opened once per operation.

In the manner of deltalake's ``DeltaTable``: `FeedTables` owns the feed's table paths and one
snapshot of each table (a `TableLog`, opened on first use and kept), and answers the feed's
questions of them: the held and tier states, the held files' statistics, ingest sequence and
commit-token lookups. An operation opens it once and calls `FeedTables.refresh` after a commit
of its own, so every read within one step sees the same snapshot and a table is not re-opened
for each question. No JVM.

`TableLog` (`engine.delta.table_log`) stays generic Delta; what waterline's feed model makes of
a table's log is here. The functions below answer for one `TableLog` and are what the handle's
methods call; code that already holds one table's log (a stream batch, a release step) calls them
directly.
"""

from __future__ import annotations

from typing import Any, Iterable

import pyarrow as pa

from waterline.clock import format_instant
from waterline.engine.core import columns as C
from waterline.engine.core.held_stats import HeldFile
from waterline.engine.core.races import SkippedCommit
from waterline.engine.core.state import HeldState, TierState
from waterline.engine.core.status import first_run_hint
from waterline.engine.delta.table_log import APP_COMMIT, APP_SEQ, ROW_PRESERVING, TableLog, parse_state
from waterline.errors import WaterlineError
from waterline.spec import FeedSpec

_HISTORY_DEPTH = 50


def _number(state: dict[str, Any]) -> int:
    return int(state.get("n", -1))


# -- one table's log, read as the feed's ------------------------------------------------


def tier_state(log: TableLog) -> TierState:
    """The tier's state (the initial one for a tier never committed to).

    Every commit that changes a tier's state writes it to the table property too (the
    release's own commit, the Spark path's property commit after its MERGE, hold and
    resume), so the property is the newest state whenever no data commit is known past
    it (the ``waterline.commit`` transaction): then no commit file is read, and the cost
    of a read does not grow with the tier's history. Otherwise (a crash between the Spark
    path's two commits, a tier just created) `TableLog.latest_state` searches the history."""
    prop = log.property_state()
    committed = log.transaction_version(APP_COMMIT)
    if prop is not None and (committed is None or _number(prop) >= committed):
        raw: dict[str, Any] | None = prop
    else:
        raw = log.latest_state()
    return TierState() if raw is None else TierState.from_json(raw, where=f"table {log.path}")


def held_state(log: TableLog, feed: str) -> HeldState:
    """The held table's state: ingest sequence counter and event-time bookkeeping.

    The sequence is the greatest of the state's, the ``waterline.seq``
    transaction version (kept across log cleanup) and, for tables written
    before that, the files' ``_wl_seq`` statistics. An existing table never
    starts again at 0.
    """
    if not log.exists:
        return HeldState()
    raw = log.latest_state()
    state = HeldState() if raw is None else HeldState.from_json(raw, where=f"table {log.path}")
    seqs = [raw.get("seq") if raw else None, log.transaction_version(APP_SEQ)]
    if seqs == [None, None]:
        seqs.append(max_file_seq(log))
    known = [s for s in seqs if s is not None]
    if not known:
        raise WaterlineError(
            f"feed {feed}: held table {log.path} has no waterline state, transaction or sequence statistics; "
            "it was not written by waterline, or its log was rewritten"
        )
    return state.evolve(seq=max(known))


def states_since(log: TableLog, *, after_seq: int) -> list[HeldState]:
    """Held states of the newest commits whose ``seq > after_seq``, newest first."""
    if not log.exists:  # no table yet: no state since anything
        return []
    found: list[HeldState] = []
    # a long run of ingests since the last release: look further back
    for commits in log.search(f"the held states after ingest sequence {after_seq}"):
        found = []
        for commit in commits:
            raw = parse_state(commit.get("userMetadata"))
            if raw is None:
                continue
            if int(raw.get("seq") or 0) <= after_seq:
                return found
            found.append(HeldState.from_json(raw, where=f"table {log.path}"))
    return found


def last_ingest_state(log: TableLog, partition: str, *, depth: int = _HISTORY_DEPTH) -> HeldState | None:
    """The state of the newest ingest commit of ``partition`` among the last ``depth`` commits,
    or None if it is older, absent, or a foreign commit may have changed rows since."""
    for commit in log.history(depth):
        raw = parse_state(commit.get("userMetadata"))
        if raw is None:
            if commit.get("operation") in ROW_PRESERVING:
                continue
            return None
        if raw.get("op") == "ingest" and raw.get("partition") == partition:
            return HeldState.from_json(raw, where=f"table {log.path}")
    return None


def committed_version(log: TableLog, token: str, *, after: int | None) -> int:
    """The version of the commit whose state carries ``token`` (made after version
    ``after``); raises `SkippedCommit` if there is none: Delta skipped it as already
    applied, or another writer's commit replaced it."""
    version = _token_version(log, token, after=after)
    if version is None:
        raise SkippedCommit(f"{log.path}: commit {token} did not land (versions after {after} hold none)")
    return version


def names_token(log: TableLog, token: str, *, after: int | None) -> bool:
    """Whether a commit made after version ``after`` carries ``token`` in its state."""
    return _token_version(log, token, after=after) is not None


def _token_version(log: TableLog, token: str, *, after: int | None) -> int | None:
    if not log.exists:
        return None
    newest = log.version if log.version is not None else -1
    depth = newest - (-1 if after is None else after)
    for commit in log.history(max(depth, 1)):
        state = parse_state(commit.get("userMetadata"))
        if state is not None and state.get("token") == token:
            return int(commit["version"])
    return None


def held_files(log: TableLog, tiers: Iterable[str]) -> list[HeldFile]:
    """The held table's current files with the statistics a release needs."""
    actions = log.file_statistics()
    n = len(actions.get("path", []))

    def column(name: str) -> list:
        return actions.get(name, [None] * n)

    tiers = list(tiers)
    parts, paths = column(f"partition.{C.PARTITION}"), column("path")
    records = column("num_records")
    seq_min, seq_max = column(f"min.{C.SEQ}"), column(f"max.{C.SEQ}")
    stats = {t: (column(f"min.{C.tau(t)}"), column(f"max.{C.tau(t)}"), column(f"max.{C.last(t)}")) for t in tiers}
    return [
        HeldFile(
            partition=parts[i], records=records[i], seq_min=seq_min[i], seq_max=seq_max[i],
            tau_min={t: stats[t][0][i] for t in tiers},
            tau_max={t: stats[t][1][i] for t in tiers},
            last_max={t: stats[t][2][i] for t in tiers},
            path=paths[i],
        )
        for i in range(n)
    ]


def partitions(log: TableLog) -> set[str]:
    """The feed partitions the table has files in (from the log, no data read)."""
    return set(log.file_statistics().get(f"partition.{C.PARTITION}", []))


def max_file_seq(log: TableLog) -> int | None:
    """The greatest ``_wl_seq`` among the held table's files, from their statistics."""
    values = [v for v in log.file_statistics().get(f"max.{C.SEQ}", []) if v is not None]
    return max(values) if values else None


def row_count(log: TableLog, in_partitions: Iterable[str] | None = None) -> int | None:
    """Rows in the table (of the feed partitions ``in_partitions`` only, when given), from the
    files' statistics; None without a table or when a file has no statistics."""
    return log.row_count(None if in_partitions is None else {C.PARTITION: in_partitions})


# -- the handle ---------------------------------------------------------------------------


class FeedTables:
    """The tables of one feed at one snapshot each: held, the tiers, quarantine.

    Open it once per operation (`FeedTables.open`); a table's log is opened on first use
    and kept, so every question of one step reads the same snapshot. After a commit of
    its own, the operation calls `refresh` for the tables it wrote.
    """

    def __init__(self, spec: FeedSpec) -> None:
        self.spec = spec
        self._logs: dict[tuple[str, int | None], TableLog] = {}  # (path, version; None: the latest)

    @classmethod
    def open(cls, spec: FeedSpec) -> FeedTables:
        """The handle of ``spec``'s tables; nothing is read until a question needs it."""
        return cls(spec)

    @property
    def feed(self) -> str:
        return self.spec.feed

    # -- paths and snapshots -------------------------------------------------------

    @property
    def held_path(self) -> str:
        return self.spec.held_path

    @property
    def quarantine_path(self) -> str:
        return self.spec.quarantine_path

    def tier_path(self, tier: str) -> str:
        return self.spec.tier_path(tier)

    def log(self, path: str, *, version: int | None = None) -> TableLog:
        """The snapshot of the feed's table at ``path`` (its latest version, or ``version``),
        opened on first use, then kept."""
        if (path, version) not in self._logs:
            self._logs[path, version] = TableLog.open(path, version=version)
        return self._logs[path, version]

    @property
    def held(self) -> TableLog:
        """The held table's snapshot."""
        return self.log(self.held_path)

    def tier(self, tier: str) -> TableLog:
        """Tier ``tier``'s table snapshot."""
        return self.log(self.tier_path(tier))

    @property
    def quarantine(self) -> TableLog:
        """The quarantine table's snapshot."""
        return self.log(self.quarantine_path)

    def refresh(self, *paths: str) -> FeedTables:
        """Forget the latest snapshots of ``paths`` (of every table when none is named): the
        next question reads their newest version. Call it after a commit to them."""
        for path in paths or tuple(p for p, _ in self._logs):
            self._logs.pop((path, None), None)
        return self

    # -- the feed's questions --------------------------------------------------------

    def held_state(self) -> HeldState:
        """The held table's state (`held_state`)."""
        return held_state(self.held, self.feed)

    def tier_state(self, tier: str) -> TierState:
        """Tier ``tier``'s state (`tier_state`)."""
        return tier_state(self.tier(tier))

    def tier_states(self) -> dict[str, TierState]:
        """Every tier's state, by tier name."""
        return {t: self.tier_state(t) for t in self.spec.tiers}

    def held_files(self) -> list[HeldFile]:
        """The held files with every tier's statistics (`held_files`)."""
        return held_files(self.held, self.spec.tiers)

    def states_since(self, *, after_seq: int) -> list[HeldState]:
        """Held states newer than ingest sequence ``after_seq``, newest first (`states_since`)."""
        return states_since(self.held, after_seq=after_seq)

    def last_ingest_state(self, partition: str) -> HeldState | None:
        """The newest ingest state of ``partition`` among held's recent commits (`last_ingest_state`)."""
        return last_ingest_state(self.held, partition)

    def held_partitions(self) -> set[str]:
        """The partitions held has files in."""
        return partitions(self.held)

    # -- reads of a tier's rows (`Feed.read`, `Feed.changes`; deltalake, no Spark) ----------

    def read(self, tier: str, *, version: int | None = None, as_of_us: int | None = None,
             columns: list[str] | None = None) -> pa.Table:
        """Tier ``tier``'s rows at table ``version``, or at the newest retained version whose
        W_T is at or before ``as_of_us``, or now."""
        if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 0):
            raise WaterlineError(f"feed {self.feed}: read version={version!r}: expected a table version (int >= 0)")
        if as_of_us is not None:
            version = self.version_at(tier, as_of_us)
        log = self.log(self.tier_path(tier), version=version)
        if not log.exists:
            raise WaterlineError(f"feed {self.feed}: tier {tier} has no table yet: {first_run_hint(self.spec)}")
        return log.to_arrow(columns)

    def version_at(self, tier: str, instant_us: int) -> int:
        """The newest retained version of the tier whose W_T is at or before ``instant_us``."""
        states = self.tier(tier).waterline_states()
        at = [version for version, state in states if state.get("w") is not None and state["w"] <= instant_us]
        if not at:
            raise WaterlineError(
                f"feed {self.feed}: tier {tier} has no retained version with W_T at or before "
                f"{format_instant(instant_us)} (released later, or its log was cleaned up)")
        return max(at)

    def changes(self, tier: str, since: int | None = None) -> pa.Table:
        """The tier's change data feed from table version ``since`` (None: its first version)."""
        log = self.tier(tier)
        if not log.exists:
            raise WaterlineError(f"feed {self.feed}: tier {tier} has no table yet: {first_run_hint(self.spec)}")
        if since is not None and (isinstance(since, bool) or not isinstance(since, int) or since < 0):
            raise WaterlineError(f"feed {self.feed}: changes since={since!r}: expected a table version (int >= 0)")
        start = 0 if since is None else since
        if start > log.version:  # nothing since: an empty table with the feed's columns
            return log.changes(log.version, log.version).slice(0, 0)
        try:
            return log.changes(start, log.version)
        except Exception as exc:  # deltalake: CDF not enabled, or versions cleaned up
            first = (str(exc).strip().splitlines() or [""])[0]
            raise WaterlineError(f"feed {self.feed}: tier {tier}: no change data since version {start}: {first}") from None
