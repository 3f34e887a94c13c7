"""Ingest and release on S3 while the network and other writers misbehave.

Between waterline (boto3, deltalake, Spark's S3A) and s3proxy sits `FaultProxy`,
which loses responses after the store applied a request, resets connections,
answers 503 and adds latency on chosen requests; other writers (Spark's
OPTIMIZE, DELETE and VACUUM, deltalake's property commits) commit to a tier in
the middle of a release (on a local warehouse, where the race is the same
create-if-absent, and Spark's OPTIMIZE once on S3). After every scenario:

* every file every snapshot of the held and tier tables names exists;
* every tier equals `waterline.semantics` at its W_T;
* no waterline commit was applied twice (each state token once, commit numbers rising).
"""

from __future__ import annotations

import pytest

from tests.engine.feedkit import PAYLOAD, far_future_clock, make_spec, read_tier, write_partition
from tests.engine.model import MINUTE, POLICIES, FeedModel, expected_tier
from tests.engine.test_release_differential import BASE_US, _iso
from tests.faults.proxy import Rule
from waterline.errors import OutcomeUnknown, TransientError, WaterlineError

pytestmark = pytest.mark.spark

TIERS = {"d10": POLICIES["d10"], "emb": POLICIES["emb"]}
COMMIT = r"/_delta_log/\d{20}\.json$"


def _row(key: int, minute: int, v: str, embargo_minute: int | None = None) -> dict:
    return {"id": key, "event_time": BASE_US + minute * MINUTE, "status": "final",
            "embargo_until": None if embargo_minute is None else BASE_US + embargo_minute * MINUTE, "v": v}


def _source(row: dict) -> dict:
    return {**row, "event_time": _iso(row["event_time"]),
            "embargo_until": None if row["embargo_until"] is None else _iso(row["embargo_until"])}


class Scenario:
    """A feed on the faulty store with its model; `check` asserts the three properties."""

    def __init__(self, spark, tmp_path, warehouse: str) -> None:
        from waterline import Feed

        self.tmp_path = tmp_path
        self.spec = make_spec(tmp_path, TIERS, warehouse=warehouse)
        self.feed = Feed(self.spec, spark=spark, clock=far_future_clock())
        self.model = FeedModel(TIERS)
        self.w: dict[str, int] = {}

    def ingest(self, partition: str, rows: list[dict]) -> None:
        write_partition(self.tmp_path, partition, [_source(r) for r in rows])
        result = self.feed.ingest(partition)
        assert result.versions_written == self.model.ingest(partition, rows)

    def release(self, minute: int):
        result = self.feed.release(as_of=BASE_US + minute * MINUTE)
        self.w = {t: r.w_us for t, r in result.tiers.items()}
        return result

    def check(self) -> None:
        from waterline.engine.delta.table_log import TableLog
        from waterline.engine.tables import feed_tables

        for path in (self.spec.held_path, *map(self.spec.tier_path, self.spec.tiers)):
            assert_log_sound(path)
        for tier in self.spec.tiers:
            state = feed_tables.tier_state(TableLog.open(self.spec.tier_path(tier)))
            got = {k: (tuple(r[c] for c in PAYLOAD), r["_wl_seq"])
                   for k, r in read_tier(None, self.spec, tier).items()}
            assert got == expected_tier(self.model, tier, state.w, state.seq), \
                f"tier {tier} differs from the semantics at (W_T, seq) = ({state.w}, {state.seq})"


def assert_log_sound(path: str) -> None:
    """What faults must not break in a table waterline commits to: every file its commits
    name exists, and no waterline commit was applied twice (commit numbers rising)."""
    from waterline.engine.delta.table_log import TableLog

    _every_snapshot_names_existing_files(path)
    states = [s for _, s in TableLog.open(path).waterline_states() if s.get("op") in ("release", "ingest")]
    # One commit number, one token: the Spark path's MERGE and the property commit after it
    # carry the same state; a step applied twice would carry its number with two tokens.
    by_number: dict = {}
    for state in states:
        by_number.setdefault(state.get("n"), set()).add(state.get("token"))
    assert all(len(t) == 1 for t in by_number.values()), f"{path}: a commit applied twice: {by_number}"
    numbers = [s.get("n") for s in states]
    assert numbers == sorted(numbers), f"{path}: commit numbers went back: {numbers}"


def _every_snapshot_names_existing_files(path: str) -> None:
    """Every file an add action of any commit names exists: then so does every file of every
    snapshot (nothing here vacuums). One read per commit file and one listing of the table."""
    from urllib.parse import unquote

    from waterline.engine.delta.actions import AddFile
    from waterline.engine.delta.objects import list_tree
    from waterline.engine.delta.table_log import TableLog, read_commit

    named: dict[str, int] = {}
    for version in range(TableLog.open(path).version + 1):
        for action in read_commit(path, version) or ():
            if isinstance(action, AddFile):
                named.setdefault(unquote(action.path), version)
    present = {o.relative for o in list_tree(path)}
    missing = {p: v for p, v in named.items() if p not in present}
    assert not missing, f"{path}: commits name deleted files: {missing}"


@pytest.fixture
def scenario(faulty_spark, faulty_s3, tmp_path, monkeypatch):
    proxy, warehouse = faulty_s3
    monkeypatch.setenv("WATERLINE_LEASE_WAIT_S", "60")  # a lease that never comes fails fast, not in 600 s
    s = _seeded(Scenario(faulty_spark, tmp_path, warehouse))
    s.check()
    return s, proxy


def _seeded(s: Scenario) -> Scenario:
    """The scenarios' common start: two rows of partition a ingested and released at minute 20."""
    s.ingest("a", [_row(1, 0, "x"), _row(2, 5, "y", embargo_minute=30)])
    s.release(20)
    return s


def test_a_lost_answer_to_a_held_commit_is_a_success_not_a_lost_race(scenario):
    s, proxy = scenario
    [lost] = proxy.add(Rule("drop_response", r"/f/held" + COMMIT))
    s.ingest("b", [_row(3, 10, "z"), _row(4, 12, "w", embargo_minute=40)])
    assert lost.hits == 1
    s.release(45)
    s.check()


@pytest.mark.parametrize("tier", list(TIERS))
def test_a_lost_answer_to_a_tier_commit_is_a_success_not_a_lost_race(scenario, tier):
    s, proxy = scenario
    s.ingest("a", [_row(1, 0, "x2"), _row(2, 5, "y", embargo_minute=30), _row(5, 8, "v")])
    [lost] = proxy.add(Rule("drop_response", rf"/f/tiers/{tier}" + COMMIT))
    result = s.release(35)
    assert lost.hits == 1
    assert result.tiers[tier].changed
    s.check()


def test_errors_answered_after_the_store_applied_a_commit_end_in_success(scenario):
    """The store applies the PUT, the answer is a 503, and so is the answer to boto3's retry
    (which the store refused with 412): boto3 gives up with a 5xx, the outcome is unknown,
    the write is read back and is ours."""
    s, proxy = scenario
    s.ingest("a", [_row(1, 0, "x3"), _row(2, 5, "y", embargo_minute=30)])
    [rule] = proxy.add(Rule("status_after", r"/f/tiers/d10" + COMMIT, times=2))
    s.release(36)
    assert rule.hits == 2
    s.check()


def test_a_commit_the_store_never_answers_is_not_assumed_and_its_files_stay_until_known(scenario):
    s, proxy = scenario
    s.ingest("b", [_row(6, 1, "u")])
    before = {t: s.feed.status().tiers[t].w_us for t in TIERS}
    [storm] = proxy.add(Rule("status", r"/f/tiers/d10" + COMMIT, times=10_000))
    with pytest.raises(OutcomeUnknown):
        s.release(50)
    assert storm.hits > 1
    assert s.feed.status().tiers["d10"].w_us == before["d10"]  # never landed, and not pretended to
    proxy.clear()
    s.check()  # the tier committed before the storm keeps its files; nothing half-written is visible
    s.release(50)
    s.check()


def test_resets_and_latency_on_data_files_reads_and_the_lease(scenario):
    s, proxy = scenario
    rules = proxy.add(
        Rule("reset", r"/f/tiers/[a-z0-9]+/.*\.parquet", method="PUT", times=2),  # Spark's S3A writes
        Rule("reset", COMMIT, method="GET", times=2),  # deltalake's and boto3's reads of the log
        Rule("drop_response", r"/f/_wl_lease$", method="PUT", times=1),  # the lease taken, the answer lost
        Rule("latency", r"/f/_wl_lease$", method="PUT", times=3, seconds=1.0),
    )
    s.ingest("b", [_row(7, 3, "t", embargo_minute=9)])
    s.release(60)
    assert all(rule.hits for rule in rules), [(r.action, r.hits) for r in rules]
    s.check()


def test_a_store_that_ignores_conditional_writes_is_refused_in_one_line(faulty_spark, faulty_s3, tmp_path,
                                                                       monkeypatch):
    from waterline.engine.delta import objects

    proxy, warehouse = faulty_s3
    monkeypatch.setattr(objects, "_probed", set())  # this process probed the store already
    proxy.add(Rule("strip_conditions", r".", times=10_000))
    s = Scenario(faulty_spark, tmp_path, warehouse)
    write_partition(tmp_path, "a", [_source(_row(1, 0, "x"))])
    with pytest.raises(WaterlineError) as refused:
        s.feed.ingest("a")
    message = str(refused.value)
    assert "\n" not in message and "If-None-Match" in message and "AWS_ENDPOINT_URL" in message
    assert not isinstance(refused.value, TransientError)


def test_a_lost_answer_to_a_token_store_write_creates_one_token(faulty_s3):
    """The sharing token store's conditional PUT answered with nothing: read back, it is ours,
    so `token create` does not apply its change a second time (a second, ghost token)."""
    import time

    from waterline.sharing.tokens import TokenStore

    proxy, warehouse = faulty_s3
    store = TokenStore(f"{warehouse}/_wl_sharing/tokens.json", refresh_s=0)
    [lost] = proxy.add(Rule("drop_response", r"/_wl_sharing/tokens\.json$"))
    now = int(time.time() * 1000)
    token, _ = store.create("acme", now_ms=now, expires_ms=None)
    assert lost.hits == 1
    assert [r.recipient for r in store.records()] == ["acme"]
    assert store.authenticate(token, now) == "acme"


# -- other writers on a tier, in the middle of a release -------------------------------------

def _foreign(kind: str, spark, path: str) -> None:
    from waterline.engine.delta.storage import delta_table

    where = f"delta.`{path}`"
    if kind == "optimize":
        spark.sql(f"OPTIMIZE {where}").collect()
    elif kind == "properties":
        delta_table(path).alter.set_table_properties({"delta.logRetentionDuration": "interval 40 days"})
    elif kind == "vacuum":
        spark.sql(f"VACUUM {where} RETAIN 168 HOURS").collect()
    elif kind == "delete":
        spark.sql(f"DELETE FROM {where} WHERE id = 1")
    else:
        raise KeyError(kind)


@pytest.fixture
def local_scenario(spark, tmp_path):
    """The same feed on a local warehouse: a race between writers is the store's to settle
    only through create-if-absent, which the local store and S3 give alike (one S3 case below)."""
    return _seeded(Scenario(spark, tmp_path, str(tmp_path / "wh")))


@pytest.mark.parametrize(("kind", "when"), [
    ("optimize", "between-tiers"), ("properties", "between-tiers"), ("delete", "between-tiers"),
    ("vacuum", "before-check"), ("delete", "before-check"),
])
def test_another_writer_on_a_tier_during_a_release(local_scenario, spark, monkeypatch, kind, when):
    """Row-keeping commits are committed after; row changes make the tier plan again and be
    reconciled; the tier committed first keeps its files either way."""
    _race(local_scenario, spark, monkeypatch, kind, when)


def test_another_writer_on_a_tier_of_s3_during_a_release(scenario, faulty_spark, monkeypatch):
    """Spark's OPTIMIZE (through waterline's conditional LogStore) between two tier commits on S3."""
    _race(scenario[0], faulty_spark, monkeypatch, "optimize", "between-tiers")


def _race(s: Scenario, spark, monkeypatch, kind: str, when: str) -> None:
    from waterline.engine.core import faults
    from waterline.engine.release import release as release_step

    s.ingest("b", [_row(3, 2, "z"), _row(4, 4, "w", embargo_minute=25)])
    s.release(30)  # emb now holds files in a and b: an OPTIMIZE has something to rewrite
    s.ingest("a", [_row(1, 0, "x4"), _row(2, 5, "y", embargo_minute=30), _row(8, 6, "s", embargo_minute=33)])
    target = s.spec.tier_path("emb")
    fired = []

    def once() -> None:
        if not fired:
            fired.append(kind)
            _foreign(kind, spark, target)

    if when == "between-tiers":
        real = faults.boundary
        monkeypatch.setattr(faults, "boundary",
                            lambda name: once() if name == faults.RELEASE_BETWEEN_TIERS else real(name))
    else:
        real_stage = release_step.stage

        def stage_then_foreign(*args, **kwargs):
            staged = real_stage(*args, **kwargs)
            once()
            return staged

        monkeypatch.setattr(release_step, "stage", stage_then_foreign)
    s.release(40)
    assert fired == [kind]
    s.check()


def test_maintain_through_lost_answers_and_resets(scenario):
    """Maintenance on the faulty store: Spark's OPTIMIZE commit (through waterline's LogStore)
    loses its answer after the store applied it, data-file reads are reset, and the lease's
    answers are slow; the compacted tier stays whole and equal to the semantics."""
    s, proxy = scenario
    for minute in (24, 26, 28):  # each release adds a file to partition a of d10
        s.ingest("a", [_row(1, 0, "x"), _row(2, 5, "y", embargo_minute=30), *[
            _row(10 + m, m - 12, f"n{m}") for m in range(24, minute + 1, 2)]])
        s.release(minute)
    rules = proxy.add(
        Rule("drop_response", r"/f/tiers/d10" + COMMIT, times=1),  # Spark's first commit (S3A, the LogStore)
        Rule("reset", r"/f/tiers/d10/.*\.parquet", method="GET", times=2),
        Rule("latency", r"/f/_wl_lease$", method="PUT", times=2, seconds=0.5),
    )
    result = s.feed.maintain(tier="d10").tables["d10"]
    assert rules[0].hits == 1 and result.files_compacted >= 2
    proxy.clear()
    s.check()
