"""The release proof (`engine.proof.release_proof`) against `waterline.semantics.due_since`, and on breaches.

Real feeds, real Spark releases and Delta change data feeds; the oracle recomputes every
change of every release from the model's versions.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.engine.feedkit import far_future_clock, make_spec, write_partition
from tests.engine.model import MINUTE, POLICIES, FeedModel
from tests.engine.test_release_differential import BASE_US, _iso, _next_output, _plan, _to_source

pytestmark = pytest.mark.spark

HISTORIES = 12
KEYS = 4


def _prove_all(spark, spec, **kwargs):
    from waterline.engine.proof.release_proof import prove_tier

    out, plans = {}, None
    for tier in spec.tiers:
        out[tier], plans = prove_tier(spark, spec, tier, plans=plans, **kwargs)
    return out


def test_every_change_of_every_release_is_due_when_the_oracle_says(spark, tmp_path, seed=11):
    from waterline import Feed
    from waterline.semantics import due_since, governing, release_changes, tier_state

    rng = random.Random(seed)
    spec = make_spec(tmp_path, POLICIES)
    feed = Feed(spec, spark=spark, clock=far_future_clock())
    model = FeedModel(POLICIES)
    outputs = {p: {h: {} for h in range(HISTORIES)} for p in ("a", "b")}
    for op, arg in _plan(rng, 7) + [("release", 200)]:
        if op == "ingest":
            for h in range(HISTORIES):
                outputs[arg][h] = _next_output(rng, outputs[arg][h], range(h * 100, h * 100 + KEYS))
            rows = [r for h in outputs[arg].values() for r in h.values()]
            write_partition(tmp_path, arg, [_to_source(r) for r in rows])
            feed.ingest(arg)
            model.ingest(arg, rows)
        else:
            feed.release(as_of=BASE_US + arg * MINUTE)
    proofs = _prove_all(spark, spec, with_rows=True)
    history = {}
    for v in model.versions:
        history.setdefault(v.identity, []).append(v)
    checked = 0
    for tier, proof in proofs.items():
        assert proof.exists and proof.clean, (tier, proof.unproven, proof.breaches)
        rows_by_version: dict[int, list[tuple]] = {}
        for row in proof.rows:
            rows_by_version.setdefault(row[0], []).append(row)
        before, w_before = {}, None
        for release in proof.releases:
            if release.seq is None:  # not a waterline commit: nothing another writer did here
                continue
            after = tier_state(model.versions, tier, release.w_us, release.seq)
            inserted, updated, removed = release_changes(before, after)
            # the same version shown in a later interval of its visibility is rewritten too
            updated |= {i for i in set(before) & set(after) - updated
                        if _interval(before[i], tier, w_before) != _interval(after[i], tier, release.w_us)}
            assert (release.inserted, release.updated, release.deleted) == (len(inserted), len(updated), len(removed)), \
                (tier, release.version, seed)
            for version, change, key, seq, due in rows_by_version.get(release.version, []):
                identity = (key[0], key[1])
                want = due_since(history[identity], tier, release.w_us, release.seq)
                if change != "delete":
                    assert (due, seq) == (want, after[identity].seq), (tier, version, identity, seed)
                    # a rewrite is the version the tier already showed, in its later interval
                    assert (change == "rewrite") == (identity in before and before[identity].seq == seq)
                    assert change == "rewrite" or release.min_margin_us is None \
                        or release.committed_us - due >= release.min_margin_us
                    checked += 1
                elif governing(history[identity], tier, release.w_us, release.seq).seq == seq:
                    assert due == want, (tier, version, identity, seed)  # it expired: gone when its interval ended
                    checked += 1
            assert release.breaches == 0 and (release.min_margin_us is None or release.min_margin_us > 0)
            before, w_before = after, release.w_us
    assert checked > 20  # the histories really released, updated and expired rows


def _interval(version, tier: str, w: int) -> tuple[int, int]:
    [interval] = [(a, b) for a, b in version.vis_for(tier) if a <= w < b]
    return interval


def test_a_release_ahead_of_the_wall_clock_is_caught_row_by_row(spark, tmp_path):
    """A release whose trusted clock runs an hour ahead puts W_T an hour past the wall
    clock: the rows of the 10-minute tier due in that hour are breaches, with their due
    instant, and the rows due before now are not; the tier that shows every row at once
    has none."""
    from waterline import Feed
    from waterline.clock import FixedClock

    tiers = {"rt": "TRUE", "d10": POLICIES["d10"]}
    spec = make_spec(tmp_path, tiers)
    now = int(time.time() * 1_000_000)
    events = {1: now - 30 * MINUTE, 2: now - 5 * MINUTE, 3: now + 20 * MINUTE}  # due: -20 min, +5 min, +30 min
    rows = [{"id": k, "event_time": _iso(e), "status": "final", "embargo_until": None, "v": "x"} for k, e in events.items()]
    write_partition(tmp_path, "a", rows)
    ahead = Feed(spec, spark=spark, clock=FixedClock(now + 60 * MINUTE))
    ahead.ingest("a")
    ahead.release()
    proofs = _prove_all(spark, spec)
    d10 = proofs["d10"]
    assert sorted((b.key, b.due_us, b.change) for b in d10.breaches) == [
        (("a", 2), events[2] + 10 * MINUTE, "insert"), (("a", 3), events[3] + 10 * MINUTE, "insert")]
    [release] = [r for r in d10.releases if r.inserted]
    assert release.breaches == 2 and release.min_margin_us < -4 * MINUTE and not d10.clean
    assert proofs["rt"].breach_count == 0 and proofs["rt"].clean


def test_a_stage_committed_by_hand_before_its_instant_is_caught(spark, tmp_path):
    """A release staged for an instant ten minutes ahead and committed at once (what a
    pre-armed run must never do): W_T is recorded as the staged instant, the commit file
    is written now, and the rows due in between are breaches."""
    from waterline import Feed
    from waterline.clock import FixedClock
    from waterline.engine.release.prestaged import release_staged
    from waterline.engine.release.prestage import stage

    tiers = {"d10": POLICIES["d10"]}
    spec = make_spec(tmp_path, tiers)
    now = int(time.time() * 1_000_000)
    rows = [{"id": 1, "event_time": _iso(now - 5 * MINUTE), "status": "final", "embargo_until": None, "v": "x"}]
    write_partition(tmp_path, "a", rows)
    feed = Feed(spec, spark=spark, clock=FixedClock(now))
    feed.ingest("a")
    feed.release()  # creates the tier at W = now: the row is not due yet (now + 5 min)
    target = now + 10 * MINUTE
    staged = stage(spark, spec, w_us=target, clock=FixedClock(target), target_us=target)
    assert staged is not None
    assert release_staged(spec, staged, clock=FixedClock(target)).result is not None  # a clock that lies
    [breach] = _prove_all(spark, spec)["d10"].breaches
    assert (breach.key, breach.due_us) == (("a", 1), now + 5 * MINUTE)
    assert breach.committed_us <= breach.due_us and breach.w_us == target


def test_versions_cleaned_from_the_log_are_named_not_passed(spark, tmp_path):
    from waterline import Feed
    from waterline.engine.delta.table_log import TableLog

    spec = make_spec(tmp_path, {"d10": POLICIES["d10"]})
    feed = Feed(spec, spark=spark, clock=far_future_clock())
    for i in range(3):
        write_partition(tmp_path, "a", [{"id": k, "event_time": _iso(BASE_US + k * MINUTE), "status": "final",
                                         "embargo_until": None, "v": str(i)} for k in range(i + 1)])
        feed.ingest("a")
        feed.release(as_of=BASE_US + (20 + 10 * i) * MINUTE)
    path = Path(spec.tier_path("d10"))
    checkpoint = TableLog.open(str(path)).checkpoint_and_clean()  # keeps every commit: the retention is days
    for old in sorted((path / "_delta_log").glob("*.json"))[:checkpoint - 1]:  # what log cleanup leaves
        old.unlink()  # commit checkpoint - 1 stays, but no reader can rebuild its state any more
    proof = _prove_all(spark, spec)["d10"]
    assert proof.unproven == ((0, checkpoint - 1, "cleaned from the log"),)
    assert not proof.clean and proof.breach_count == 0
    assert [r.version for r in proof.releases][:1] == [checkpoint]


def _three_on_time_releases(spark, tmp_path):
    """A d10 feed with three rows, each ingested and released on time in its own commit."""
    from waterline import Feed

    spec = make_spec(tmp_path, {"d10": POLICIES["d10"]})
    feed = Feed(spec, spark=spark, clock=far_future_clock())
    rows = []
    for i in range(3):
        rows.append({"id": i, "event_time": _iso(BASE_US + 5 * i * MINUTE), "status": "final", "embargo_until": None,
                     "v": "x"})
        write_partition(tmp_path, "a", rows)
        feed.ingest("a")
        feed.release(as_of=BASE_US + (5 * i + 12) * MINUTE)
    return spec, feed


def test_commits_whose_change_data_was_vacuumed_are_named_and_the_rest_proven(spark, tmp_path):
    """Compaction replaces the files the first releases added; once vacuum deletes them (here
    by hand: vacuum waits out the retention), those releases cannot be read again: named as
    vacuumed, while the later ones are still proven."""
    from waterline.engine.delta.actions import AddFile
    from waterline.engine.delta.table_log import TableLog, read_commit

    spec, _ = _three_on_time_releases(spark, tmp_path)
    path = spec.tier_path("d10")
    first = next(v for v in range(TableLog.open(path).version + 1)
                 if any(isinstance(a, AddFile) for a in read_commit(path, v) or []))
    spark.sql(f"OPTIMIZE delta.`{path}`")  # a user's OPTIMIZE (maintain would keep the proofs first)
    for action in read_commit(path, first):  # the added files are tombstones now
        if isinstance(action, AddFile):
            (Path(path) / action.path).unlink()  # what vacuum does past the retention
    proof = _prove_all(spark, spec)["d10"]
    assert proof.unproven == ((first, first, "change data vacuumed (past the tier's maintenance.time_travel)"),)
    assert sum(r.inserted for r in proof.releases) == 2 and proof.breach_count == 0


def test_proofs_maintain_keeps_outlive_vacuumed_change_data_and_log_cleanup(spark, tmp_path):
    """maintain proves each tier's new commits before it vacuums and keeps the proofs: after
    the change data of the first releases is vacuumed and the log cleaned to a checkpoint,
    the audit still proves every release, and a breach kept is still named with its row."""
    from waterline import Feed
    from waterline.clock import FixedClock
    from waterline.engine.delta.actions import AddFile
    from waterline.engine.proof.kept_proofs import KeptProofs, kept_proofs_path
    from waterline.engine.delta.table_log import TableLog, read_commit

    spec, feed = _three_on_time_releases(spark, tmp_path)
    now = int(time.time() * 1_000_000)  # a release whose clock runs an hour ahead: row 7 goes out early
    write_partition(tmp_path, "b", [{"id": 7, "event_time": _iso(now), "status": "final", "embargo_until": None,
                                     "v": "y"}])
    ahead = Feed(spec, spark=spark, clock=FixedClock(now + 60 * MINUTE))
    ahead.ingest("b")
    ahead.release()
    before = _prove_all(spark, spec)["d10"]
    assert before.breach_count == 1 and not before.unproven

    path = spec.tier_path("d10")
    first = next(v for v in range(TableLog.open(path).version + 1)
                 if any(isinstance(a, AddFile) for a in read_commit(path, v) or []))
    assert feed.maintain(tier="d10").tables["d10"].commits_proven == len(before.releases)
    feed.maintain(tier="d10")  # an hour later: proves maintain's own commits (nothing to prove) and checkpoints
    kept = KeptProofs(kept_proofs_path(spec.feed_dir)).of("d10")
    assert [r.version for r in kept.releases] == [r.version for r in before.releases]
    # kept with the spec version each was judged by (the feed's first ingest recorded version 1)
    assert [r.spec for r in kept.releases] == [r.spec for r in before.releases] == [1] * len(before.releases)
    for action in read_commit(path, first):  # OPTIMIZE made them tombstones; vacuum deletes them
        if isinstance(action, AddFile):
            (Path(path) / action.path).unlink()
    checkpoint = TableLog.open(path).checkpoint_and_clean()
    for old in sorted((Path(path) / "_delta_log").glob("*.json"))[:checkpoint]:  # what log cleanup does
        old.unlink()

    after = _prove_all(spark, spec)["d10"]
    assert after.unproven == () and after.clean is False  # the breach, not a gap, makes it unclean
    assert [r.version for r in after.releases] == [r.version for r in before.releases]
    assert [r.spec for r in after.releases] == [1] * len(before.releases)
    assert sum(r.inserted for r in after.releases) == sum(r.inserted for r in before.releases) == 4
    [breach] = after.breaches
    assert breach == before.breaches[0] and breach.key == ("b", 7) and breach.due_us == now + 10 * MINUTE


def test_waterline_audit_exits_3_on_a_breach_and_names_the_row(spark, tmp_path):
    """The command line: a release an hour ahead of the wall clock, audited; exit 3 with the
    row, its due instant and the JSON; a range that ends before it starts is one line, exit 2."""
    import yaml

    from waterline import Feed
    from waterline.clock import FixedClock, format_instant

    spec = make_spec(tmp_path, {"d10": POLICIES["d10"]})
    now = int(time.time() * 1_000_000)
    write_partition(tmp_path, "a", [{"id": 7, "event_time": _iso(now), "status": "final", "embargo_until": None,
                                     "v": "x"}])
    feed = Feed(spec, spark=spark, clock=FixedClock(now + 60 * MINUTE))
    feed.ingest("a")
    feed.release()
    spec_file = tmp_path / "feed.yaml"
    spec_file.write_text(yaml.safe_dump(spec.to_dict()))
    waterline = str(Path(sys.executable).with_name("waterline"))
    done = subprocess.run([waterline, "audit", str(spec_file)], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 3, done.stderr
    assert "audit f: NOT CLEAN" in done.stdout
    assert "BREACH d10 v" in done.stdout and "('a', 7)" in done.stdout
    assert f"due {format_instant(now + 10 * MINUTE)}" in done.stdout
    page = tmp_path / "audit.html"
    out = subprocess.run([waterline, "audit", str(spec_file), "--json", "--since", "now - 1 hour", "--html", str(page)],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 3, out.stderr
    proof = json.loads(out.stdout)
    [breach] = proof["d10"]["breaches"]
    assert breach["due_us"] == now + 10 * MINUTE and breach["key"] == ["a", 7]

    # The page: the verdict, the summary and the breached row, and exactly the JSON's data.
    from tests.reports.pagecheck import check_carries, render, table_rows
    from waterline.reports.page import instant

    dom = render(page, "audit-breach.png", tmp_path)
    check_carries(dom, proof)
    assert "BREACH</span>" in dom
    [summary] = table_rows(dom, "summary")
    assert summary[0] == "d10" and summary[5] == "1" and summary[-1] == "BREACH", summary
    [row] = table_rows(dom, "breaches")
    assert row[2] == "['a', 7]" and row[4] == instant(now + 10 * MINUTE), row
    bad = subprocess.run([waterline, "audit", str(spec_file), "--since", "2026-02-01", "--until", "2026-01-01"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2 and "is before --since" in bad.stderr and "Traceback" not in bad.stderr
