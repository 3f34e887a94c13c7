"""Pre-armed releases never commit a row before its due instant (real Spark + Delta).

A run that starts early waits on the trusted clock; a clock read a microsecond
before the instant keeps it waiting; a clock that steps back under the lease
holds W below due, and the release waits and goes again. Checked from the
tier's Delta history: each commit's W_T and timestamp against the due
instants of the rows it added. No time assertions.
"""

from __future__ import annotations

from tests.engine.feedkit import _micros, make_spec, write_partition
from waterline.clock import FixedClock, SystemClock, format_instant
from waterline.engine.core.due import arming_line
from waterline.engine.delta.table_log import TableLog
from waterline.engine.proof.timeliness import appearances
from waterline.engine.ingest.ingest import ingest
from waterline.engine.release.prearmed import release_following, release_run, release_when_due
from waterline.engine.release.release import rehearse, release

DUE = 1_800_000_000_000_000  # 2027-01-15T08:00:00Z
SECOND = 1_000_000
TIERS = {"emb": "embargo_until <= WATERLINE()"}


class ScriptedClock:
    """Returns the scripted readings in order, then the last one forever; counts reads."""

    def __init__(self, *readings: int) -> None:
        self.readings = list(readings)
        self.reads = 0

    def now_us(self) -> int:
        value = self.readings[min(self.reads, len(self.readings) - 1)]
        self.reads += 1
        return value


def _feed(spark, root, dues: dict[int, int], clock):
    spec = make_spec(root, TIERS)
    write_partition(root, "a", [
        {"id": i, "event_time": format_instant(due), "status": "final", "embargo_until": format_instant(due), "v": "x"}
        for i, due in dues.items()
    ])
    ingest(spark, spec, "a", clock=clock)
    return spec


def _due_of(row) -> int:
    return _micros(row["embargo_until"])


def test_an_early_run_and_a_read_just_before_the_instant_wait(spark, tmp_path):
    spec = _feed(spark, tmp_path, {0: DUE - 3600 * SECOND, 1: DUE, 2: DUE + 60 * SECOND}, FixedClock(DUE - 120 * SECOND))
    release(spark, spec, clock=FixedClock(DUE - 60 * SECOND))  # publishes row 0 only
    # next due (read_feed_state), wait start 10 s early, a read 1 µs before, then past it
    clock = ScriptedClock(DUE - 10 * SECOND, DUE - 10 * SECOND, DUE - 1, DUE - 1, DUE + 5)
    done = release_when_due(spark, spec, clock=clock)
    assert done.due_us == DUE and done.reached and done.clock_at_release_us >= DUE
    assert done.result.w_us == DUE
    seen = appearances(spec, "emb", _due_of)
    assert sorted(a.row["id"] for a in seen) == [0, 1]
    assert all(a.w_us >= a.due_us for a in seen)  # W_T of the commit that added it is past due
    assert clock.reads >= 5  # the 1-µs-early reading did not end the wait


def test_a_clock_stepping_back_under_the_lease_holds_the_row_then_releases_it(spark, tmp_path):
    spec = _feed(spark, tmp_path, {1: DUE, 2: DUE + 60 * SECOND}, FixedClock(DUE - 120 * SECOND))
    # the wait sees DUE at once; the release reads DUE - 1 (W capped below due); then DUE + 2
    clock = ScriptedClock(DUE, DUE - 1, DUE + 2)
    done = release_when_due(spark, spec, due_us=DUE, clock=clock)
    assert done.result.w_us == DUE
    seen = appearances(spec, "emb", _due_of)
    assert [a.row["id"] for a in seen] == [1]
    assert all(a.w_us >= a.due_us for a in seen)


def test_real_clock_rows_are_readable_only_after_their_due_instants(spark, tmp_path):
    now = SystemClock().now_us()
    first, second = now + 4 * SECOND + 123, now + 7 * SECOND + 456
    spec = _feed(spark, tmp_path, {1: first, 2: second, 3: now + 3600 * SECOND}, SystemClock())
    for expected in (first, second):  # two runs, each started before its moment
        done = release_when_due(spark, spec)
        assert done.due_us == expected and done.reached and done.result.w_us == expected
    seen = appearances(spec, "emb", _due_of)
    assert sorted(a.row["id"] for a in seen) == [1, 2]
    for a in seen:  # ordering: the commit that made it readable is not before its due instant
        assert not a.early, (a.row["id"], a.commit_us, a.w_us, a.due_us)


def test_one_run_releases_the_moments_that_follow_within_the_lead_each_when_due(spark, tmp_path):
    now = SystemClock().now_us()
    dues = {1: now + 3 * SECOND + 11, 2: now + 5 * SECOND + 22, 3: now + 7 * SECOND + 33, 4: now + 3600 * SECOND}
    spec = _feed(spark, tmp_path, dues, SystemClock())
    first = release_when_due(spark, spec)
    done = release_following(spark, spec, first, lead_us=20 * SECOND, window_us=60 * SECOND)
    # rows 1-3 each in its own release at its own moment; row 4 is beyond the lead: left to a later run
    assert [d.due_us for d in done] == [dues[1], dues[2], dues[3]]
    assert all(d.reached and d.result.w_us == d.due_us and d.lag_us >= 0 for d in done)
    seen = appearances(spec, "emb", _due_of)
    assert sorted(a.row["id"] for a in seen) == [1, 2, 3]
    for a in seen:
        assert not a.early, (a.row["id"], a.commit_us, a.w_us, a.due_us)
    assert done[-1].result.tiers["emb"].next_due_us == dues[4]


def test_following_stops_at_the_window(spark, tmp_path):
    spec = _feed(spark, tmp_path, {1: DUE, 2: DUE + 9 * SECOND}, FixedClock(DUE - 120 * SECOND))
    clock = FixedClock(DUE)
    first = release_when_due(spark, spec, due_us=DUE, clock=clock)
    done = release_following(spark, spec, first, lead_us=20 * SECOND, window_us=1 * SECOND, clock=clock)
    assert [d.due_us for d in done] == [DUE]  # row 2 is within the lead but beyond the window
    assert sorted(a.row["id"] for a in appearances(spec, "emb", _due_of)) == [1]


def test_an_orchestrated_run_follows_the_next_moments_only_when_pre_armed(spark, tmp_path):
    dues = {1: DUE, 2: DUE + 5 * SECOND, 3: DUE + 3600 * SECOND}
    spec = _feed(spark, tmp_path, dues, FixedClock(DUE - 120 * SECOND))
    # Asked for now (a manual run): one release to the clock, no wait, nothing not yet due released.
    now_run = release_run(spark, spec, due_us=None, clock=FixedClock(DUE - 60 * SECOND))
    assert not now_run.prearmed and now_run.lags == () and now_run.result.w_us == DUE - 60 * SECOND
    assert appearances(spec, "emb", _due_of) == []
    # Pre-armed for row 1 (the first reading is before it, every later one 10 s past it): it
    # releases row 1 at its moment, then row 2 (within the lead) at its own, and stops at row 3.
    armed = release_run(spark, spec, due_us=DUE, clock=ScriptedClock(DUE - 10 * SECOND, DUE + 10 * SECOND))
    assert armed.prearmed and armed.lags == ((DUE, 10 * SECOND), (DUE + 5 * SECOND, 5 * SECOND))
    assert armed.result.w_us == DUE + 5 * SECOND
    seen = appearances(spec, "emb", _due_of)
    assert sorted(a.row["id"] for a in seen) == [1, 2] and all(a.w_us >= a.due_us for a in seen)
    assert armed.result.tiers["emb"].next_due_us == dues[3]


def test_a_rehearsal_at_the_due_moment_commits_nothing(spark, tmp_path):
    spec = _feed(spark, tmp_path, {1: DUE, 2: DUE + 60 * SECOND}, FixedClock(DUE - 120 * SECOND))
    release(spark, spec, clock=FixedClock(DUE - 60 * SECOND))
    paths = [spec.held_path, *(spec.tier_path(t) for t in spec.tiers)]
    before = [TableLog.open(p).version for p in paths]
    rehearse(spark, spec, w_us=DUE)
    assert [TableLog.open(p).version for p in paths] == before
    assert appearances(spec, "emb", _due_of) == []
    # ...and the release at the moment publishes exactly what is due then.
    assert release(spark, spec, as_of_us=DUE, clock=FixedClock(DUE)).tiers["emb"].released == 1
    assert [a.row["id"] for a in appearances(spec, "emb", _due_of)] == [1]


def test_a_run_for_a_moment_already_past_releases_at_once_and_reports_its_lag(spark, tmp_path):
    dues = {1: DUE, 2: DUE + 5 * SECOND}
    spec = _feed(spark, tmp_path, dues, FixedClock(DUE - 120 * SECOND))
    # The trigger fired for DUE, but Spark was up 7 s after it: no wait, no following; one
    # release to the clock publishes rows 1 and 2 (both due by then), and the lag is DUE's.
    late = release_run(spark, spec, due_us=DUE, clock=FixedClock(DUE + 7 * SECOND))
    assert not late.prearmed and late.lags == ((DUE, 7 * SECOND),)
    assert late.result.w_us == DUE + 7 * SECOND
    assert sorted(a.row["id"] for a in appearances(spec, "emb", _due_of)) == [1, 2]
    assert all(a.w_us >= a.due_us for a in appearances(spec, "emb", _due_of))  # W_T, not wall time: a FixedClock


def test_the_arming_line_says_whether_the_run_waits_or_was_late():
    assert arming_line("f", None, DUE) is None
    assert arming_line("f", DUE, DUE - SECOND) == f"f: pre-armed; waiting for the due moment {format_instant(DUE)}"
    late = arming_line("f", DUE, DUE + 7 * SECOND)
    assert late.startswith(f"f: the due moment {format_instant(DUE)} passed 7.0 s before Spark was up")
    assert "release_lead_seconds" in late
