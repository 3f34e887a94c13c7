"""Property tests of the spec-change model (docs/semantics.md, "When the spec changes")."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.semantics.examples import property_settings
from tests.semantics.spec_strategies import BASE_COLUMNS, WIDER_COLUMNS, Drawn, delay, spec_histories
from waterline.semantics import Version, tier_state, visible_at
from waterline.semantics.spec_history import Commit, SpecHistory, audit, column_changes


def _fresh_versions(history: SpecHistory, tier: str, policy, s: int) -> list[Version]:
    """The versions up to ``s`` as a feed that always had ``policy`` for ``tier`` sees them."""
    return [Version(i, seq, p, {tier: () if p is None else policy.vis(p)}) for i, seq, p in history.rows if seq <= s]


def _seqs(state) -> dict:
    return {i: v.seq for i, v in state.items()}


def _replay_fresh(history: SpecHistory, tier: str, policy, s: int, w: int, at_us: int) -> dict:
    """A fresh feed with only ``tier``: the same ingests (same seqs), one release to ``w``."""
    fresh = SpecHistory({tier: policy}, history.specs[0].columns, 0)
    for seq in range(1, s + 1):
        fresh.ingest({i: p for i, q, p in history.rows if q == seq})
    assert fresh.seq == s
    (commit,) = fresh.release(w, at_us)
    return _seqs(commit.state)


@property_settings()
@given(spec_histories())
def test_a_new_tier_starts_as_a_fresh_feeds_tier_at_the_feeds_w(drawn: Drawn):
    history = drawn.history
    for number, before, after in drawn.applies:
        for tier in set(after) - set(before):
            if not any(c.spec < number for c in history.commits):
                continue  # no release before the apply, no feed W: its first commit is an ordinary release
            first = next(c for c in history.commits if c.tier == tier)
            assert first.spec == number
            assert first.w == max(c.w for c in history.commits if c.spec < number)
            assert first.at_us == history.specs[number - 1].applied_us
            assert _seqs(first.state) == _replay_fresh(history, tier, after[tier], first.s, first.w, first.at_us)


@property_settings()
@given(spec_histories())
def test_no_row_shows_before_it_is_due_under_the_spec_in_force(drawn: Drawn):
    history = drawn.history
    assert audit(history) == []
    for commit in history.commits:
        spec = history.specs[commit.spec - 1]
        assert commit.tier in spec.tiers  # a retired tier is released no more
        assert spec.applied_us <= commit.at_us  # nothing under a spec before its apply's instant
        assert commit.w <= commit.at_us  # W_T never passes the trusted clock
        versions = {(v.identity, v.seq): v for v in history.era_versions(commit)}
        for identity, shown in commit.state.items():
            assert visible_at(versions[(identity, shown.seq)].vis_for(commit.tier), commit.w)


@property_settings()
@given(spec_histories())
def test_rows_not_shown_at_an_apply_follow_the_new_policy_alone(drawn: Drawn):
    """Pending versions are rescheduled: where the tier showed nothing at the apply, its
    releases under the new policy are what a feed that always had that policy shows."""
    history = drawn.history
    for number, before, after in drawn.applies:
        for tier, policy in after.items():
            if before.get(tier) in (None, policy):
                continue
            shown = [c for c in history.commits if c.tier == tier and c.spec < number]
            at_apply = set(shown[-1].state) if shown else set()
            for commit in (c for c in history.commits if c.tier == tier and c.spec == number):
                fresh = tier_state(_fresh_versions(history, tier, policy, commit.s), tier, commit.w, commit.s)
                assert {i: s for i, s in _seqs(commit.state).items() if i not in at_apply} == \
                       {i: s for i, s in _seqs(fresh).items() if i not in at_apply}


@property_settings()
@given(spec_histories(), st.integers(1, 6), st.integers(0, 4))
def test_a_lengthened_delay_withdraws_no_published_row(drawn: Drawn, longer: int, later: int):
    history = drawn.history
    delays = {t: int(p.text.split()[2]) for t, p in history.spec.tiers.items()
              if p.text.startswith("e + ") and "<" not in p.text.replace("<=", "")}
    shown = {t: history.last(t) for t in delays}
    history.apply({t: delay(delays[t] + longer) if t in delays else p for t, p in history.spec.tiers.items()},
                  history.spec.columns, history.now_us)
    after = {c.tier: c for c in history.release(history.now_us + later, history.now_us + later)}
    for tier, before in shown.items():
        if before is None:
            continue
        for identity, seq in _seqs(before.state).items():
            if not any(i == identity and q > seq for i, q, _ in history.rows):  # no revision since
                assert _seqs(after[tier].state).get(identity) == seq
    assert audit(history) == []


@property_settings()
@given(spec_histories(), st.integers(1, 8))
def test_a_release_forced_early_under_the_policy_in_force_is_caught(drawn: Drawn, ahead: int):
    history = drawn.history
    tiers = [t for t in history.spec.tiers if history.last(t) is not None]
    if not tiers:
        return
    tier, now = tiers[0], history.now_us
    prev = history.last(tier)
    honest_w, forced_w = max(prev.w, now), max(prev.w, now) + ahead
    probe = Commit(tier, history.spec.number, forced_w, now, history.seq, {})
    versions = history.era_versions(probe)
    honest = _seqs(tier_state(versions, tier, honest_w, history.seq))
    forced_state = tier_state(versions, tier, forced_w, history.seq)
    forced = replace(probe, state=forced_state)
    early = {i for i in set(honest) | set(_seqs(forced_state))
             if honest.get(i) != _seqs(forced_state).get(i) and _seqs(prev.state).get(i) != _seqs(forced_state).get(i)}
    breaches = audit(history, history.commits + [forced])
    assert {b.identity for b in breaches} == early


@property_settings()
@given(spec_histories())
def test_a_new_column_reads_none_in_older_versions(drawn: Drawn):
    history = drawn.history
    for tier in history.spec.tiers:
        last = history.last(tier)
        for identity, row in history.contents(tier).items():
            assert set(row) == set(history.spec.columns)
            if "y" in row and "y" not in (last.state[identity].payload or {}):
                assert row["y"] is None


def test_audit_judges_each_commit_by_the_spec_it_was_released_under():
    history = SpecHistory({"d": delay(3)}, BASE_COLUMNS, 0)
    history.ingest({"a": {"e": 10, "x": 1}})
    (first,) = history.release(13, 13)  # due at 13 under a 3-step delay: published
    assert set(first.state) == {"a"}
    history.apply({"d": delay(6)}, BASE_COLUMNS, 14)  # the delay lengthened to 6
    history.ingest({"b": {"e": 10, "x": 1}})
    (second,) = history.release(15, 15)
    assert set(second.state) == {"a"}  # a stays; b waits for 16 under the policy in force
    assert audit(history) == []
    # Judged by today's policy instead, the first, honest release would be a breach: under it
    # the row it published was due at 16 only.
    assert delay(6).vis(history.rows[0][2])[0][0] == 16 > first.at_us
    (third,) = history.release(16, 16)
    assert set(third.state) == {"a", "b"}


def test_a_shortened_delay_makes_pending_versions_due_at_the_next_release():
    history = SpecHistory({"d": delay(6)}, BASE_COLUMNS, 0)
    history.ingest({"a": {"e": 10, "x": 1}})
    assert history.release(12, 12)[0].state == {}
    history.apply({"d": delay(1)}, BASE_COLUMNS, 12)
    assert set(history.release(12, 12)[0].state) == {"a"}
    assert audit(history) == []


def test_a_retired_tier_keeps_its_table_and_its_name():
    history = SpecHistory({"d": delay(0), "r": delay(0)}, BASE_COLUMNS, 0)
    history.ingest({"a": {"e": 1, "x": 1}})
    history.release(5, 5)
    history.apply({"d": delay(0)}, BASE_COLUMNS, 6)
    assert [c.tier for c in history.release(7, 7)] == ["d"]
    assert set(history.contents("r")) == {"a"}
    with pytest.raises(ValueError, match="tier r was retired"):
        history.apply({"d": delay(0), "r": delay(1)}, BASE_COLUMNS, 8)


@pytest.mark.parametrize(("new", "message"), [
    ({"e": "bigint"}, "column x removed"),
    ({"e": "int", "x": "int"}, "column e: bigint -> int is no widening"),
])
def test_refused_column_changes_name_the_column(new, message):
    with pytest.raises(ValueError, match=message):
        column_changes(BASE_COLUMNS, new)


def test_added_and_widened_columns():
    assert column_changes(BASE_COLUMNS, WIDER_COLUMNS) == (["y"], ["x"])


def test_gc_drops_superseded_versions_and_a_later_tier_never_shows_them():
    """A version gc dropped (superseded in every live tier) is shown by no tier that starts
    later; the identity shows nothing until a newer version governs, then the same as
    without gc."""
    def run(with_gc: bool) -> list[dict]:
        h = SpecHistory({"t1": delay(0)}, {"e": "bigint"}, at_us=0)
        h.ingest({"a": {"e": 0, "x": 1}, "b": {"e": 1, "x": 1}})
        h.release(5, at_us=5)
        h.ingest({"a": {"e": 4, "x": 2}})  # supersedes a's first version at once in t1
        h.release(6, at_us=6)
        if with_gc:
            assert h.gc() == 1 and h.gc() == 0
        h.apply({"t1": delay(0), "t2": delay(3)}, {"e": "bigint"}, at_us=6)
        out = [{i: v.seq for i, v in h.last("t2").state.items()}]
        for w in (7, 10):
            h.release(w, at_us=w)
            out.append({i: v.seq for i, v in h.last("t2").state.items()})
        return out

    assert run(False) == [{"a": 1, "b": 1}, {"a": 2, "b": 1}, {"a": 2, "b": 1}]
    assert run(True) == [{"b": 1}, {"a": 2, "b": 1}, {"a": 2, "b": 1}]
