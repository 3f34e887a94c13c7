"""The one-line summary of a tier's release, as the Dagster and Airflow logs print it."""

from waterline.engine.core.results import IngestResult, TierRelease


def test_a_tier_release_summary_names_feed_tier_waterlines_and_counts():
    done = TierRelease(tier="emb", w_us=1_767_607_200_000_000, previous_w_us=None, seq=3, released=2, expired=1)
    assert done.summary("f") == ("f/emb: W_T 2026-01-05T10:00:00Z (was none); released 2, updated 0, removed 0, "
                                 "expired 1")
    held = TierRelease(tier="emb", w_us=None, previous_w_us=None, seq=0, held=True)
    assert held.summary("f").endswith("(on hold)") and "W_T none" in held.summary("f")


def test_an_ingest_summary_names_feed_partition_and_counts():
    done = IngestResult(feed="f", partition="2026-01-05", seq=1, rows_read=3, versions_written=3, inserted=3,
                        updated=0, removed=0, unchanged=0, quarantined=1, late_dropped=0, event_waterline_us=None,
                        next_due_us=None)
    assert done.summary() == ("f/2026-01-05: read 3 rows, wrote 3 versions (3 new, 0 changed, 0 removed), "
                              "0 unchanged, 1 quarantined")


def test_releases_of_disjoint_tiers_combine_into_one_naming_every_tier():
    from waterline.engine.core.results import ReleaseResult, combine_releases

    rt = TierRelease(tier="rt", w_us=20, previous_w_us=10, seq=3, released=2, changed=True)
    late = TierRelease(tier="late", w_us=21, previous_w_us=10, seq=3, released=1, changed=True)
    rt_again = TierRelease(tier="rt", w_us=22, previous_w_us=20, seq=3, updated=1, changed=True)
    first = ReleaseResult(feed="f", requested_us=None, w_us=20, seq=3, tiers={"rt": rt})
    second = ReleaseResult(feed="f", requested_us=None, w_us=21, seq=3, tiers={"late": late})
    third = ReleaseResult(feed="f", requested_us=None, w_us=22, seq=3, tiers={"rt": rt_again})
    both = combine_releases([first, second])
    assert list(both.tiers) == ["rt", "late"] and both.w_us == 21
    assert both.tiers["rt"] == rt and both.tiers["late"] == late
    three = combine_releases([first, second, third])
    assert three.tiers["rt"].w_us == 22 and three.tiers["rt"].previous_w_us == 10
    assert (three.tiers["rt"].released, three.tiers["rt"].updated) == (2, 1) and three.tiers["late"] == late


def test_the_due_decision_names_the_moment_a_run_is_for_and_its_run_key():
    from waterline.clock import format_instant
    from waterline.engine.core.due import DueMoments
    from waterline.engine.core.status import FeedStatus, TierStatus
    from waterline.semantics import NEG_INF
    from waterline.spec import spec_from_dict

    spec = spec_from_dict({
        "feed": "f", "warehouse": "/tmp/wl-never-written", "source": {"format": "json", "path": "/tmp/x/{partition}"},
        "partitions": {"static": ["a"]}, "key": ["id"], "event_time": "t",
        "tiers": {"rt": "TRUE", "emb": "t <= WATERLINE()"},
    })
    now, soon = 1_800_000_000_000_000, 1_800_000_010_000_000  # soon: inside the default lead

    def status(rt_due: bool, emb_next: int | None, hold: bool = False) -> FeedStatus:
        return FeedStatus(feed="f", now_us=now, seq=4, release_w_us=now, event_w_us=None, tiers={
            "rt": TierStatus("rt", None, 0, False, None, 1, NEG_INF if rt_due else None, rt_due),
            "emb": TierStatus("emb", None, 0, hold, None, 1, emb_next, False)})

    due_now = DueMoments.of(spec, status(True, soon))
    assert (due_now.run_for_us, due_now.run_key, due_now.run_for_text) == (NEG_INF, f"f:4:{NEG_INF}", "now")
    armed = DueMoments.of(spec, status(False, soon))
    assert armed.due_us is None and armed.run_key == f"f:4:{soon}" == armed.key_of(armed.armed_us)
    assert armed.run_for_text == format_instant(soon)
    held = DueMoments.of(spec, status(False, soon, hold=True))
    assert (held.run_for_us, held.run_key, held.run_for_text) == (None, None, None)
    assert held.reason == "nothing due; no pending versions; on hold: emb"


def test_a_tier_proof_carries_its_summary_and_a_feed_its_verdict():
    from waterline.engine.core.results import ReleaseProof, TierProof, feed_verdict

    def commit(version: int, margin_us: int | None, breaches: int = 0) -> ReleaseProof:
        return ReleaseProof(version=version, committed_us=version, writer_us=version, store_us=None, w_us=version,
                            seq=version, operation="WRITE", inserted=2, updated=1, deleted=version,
                            min_margin_us=margin_us, breaches=breaches)

    clean = TierProof(tier="a", exists=True, releases=(commit(1, 5), commit(2, None), commit(3, 2)))
    assert (clean.least_margin_us, clean.rows_released, clean.rows_deleted, clean.verdict) == (2, 9, 6, "clean")
    early = TierProof(tier="b", exists=True, releases=(commit(1, 5), commit(2, -7, breaches=2)),
                      unproven=((0, 0, "cleaned from the log"),))
    assert (early.least_margin_us, early.breach_count, early.verdict) == (-7, 2, "BREACH")
    unseen = TierProof(tier="c", exists=True, unproven=((0, 4, "cleaned from the log"),))
    assert (unseen.least_margin_us, unseen.rows_released, unseen.verdict) == (None, 0, "not proven")
    new = TierProof(tier="d", exists=False)
    assert (new.least_margin_us, new.verdict) == (None, "no table")
    assert "verdict" not in new.to_dict()  # summaries are derived: --json prints the proof as before
    assert feed_verdict([clean, new]) == "clean" and feed_verdict([]) == "clean"
    assert feed_verdict([clean, unseen, new]) == "not proven"
    assert feed_verdict([unseen, early, clean]) == "BREACH"
