"""A stream drain into a warehouse on S3 while the network misbehaves between waterline and
the store (`tests.faults.proxy.FaultProxy` in front of s3proxy): a micro-batch's held commit
whose answer is lost after the store applied it, tier commits answered 503 or lost after
they landed, resets on Spark's data-file writes; then a held commit the store never answers.

After each drain: every file every commit names exists, no waterline commit was applied
twice (held: each batch's transaction once; tiers: each commit number with one token),
held has every batch's versions once and the tiers equal `waterline.semantics`."""

from __future__ import annotations

import pytest

from tests.faults.proxy import Rule
from tests.faults.test_store_faults import COMMIT, assert_log_sound
from tests.streams.kafkakit import Quote, new_topic, produce, quote_value, quotes_model, stream_spec
from waterline import load
from waterline.engine.delta import storage
from waterline.engine.delta.table_log import TableLog
from waterline.engine.ingest.stream.batch import applied_batch, batches_in_log
from waterline.errors import OutcomeUnknown

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

PER_BATCH = 4
TIERS = {"realtime": "TRUE", "delayed_15m": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"}
FIRST: list[Quote] = [("a", 1.0, 0), ("b", 2.0, 1), ("a", 1.5, 2), ("c", 3.0, 3),
                      ("b", None, 4), ("d", 4.0, 30), ("a", 1.5, 2), ("e", 5.0, 5),
                      ("c", 3.5, 26), ("f", 6.0, 6), ("d", None, 7), ("b", 2.2, 8)]
LATER: list[Quote] = [("a", None, 9), ("g", 7.0, 10), ("c", 3.6, 27), ("h", 8.0, 11)]


def _check(feed, quotes: list[Quote]) -> None:
    for path in (feed.spec.held_path, *(feed.tier_path(t) for t in TIERS)):
        assert_log_sound(path)
    ids = [b.batch_id for b in batches_in_log(TableLog.open(feed.spec.held_path), "source", after_version=None)]
    assert ids == sorted(set(ids)), f"a batch committed twice: {ids}"
    assert applied_batch(feed.spec, "source") == len(quotes) // PER_BATCH - 1
    want_versions, want_rows = quotes_model(quotes, PER_BATCH)
    held = storage.delta_table(feed.spec.held_path).to_pyarrow_table(columns=["id", "_wl_seq"]).num_rows
    assert held == want_versions, "every batch's versions once, none lost"
    for tier in TIERS:
        rows = feed.read(tier, columns=["id", "px", "_wl_partition"]).to_pylist()
        assert {r["id"]: (r["_wl_partition"], r["px"]) for r in rows} == want_rows, tier
        assert len(rows) == len(want_rows), tier


def test_a_drain_through_lost_answers_503s_and_resets_then_a_commit_never_answered(
        kafka, faulty_spark, faulty_s3, tmp_path, monkeypatch):
    proxy, warehouse = faulty_s3
    monkeypatch.setenv("WATERLINE_LEASE_WAIT_S", "60")
    topic = new_topic(kafka.bootstrap)
    spec = stream_spec(tmp_path, kafka.bootstrap, topic, tiers=TIERS, extra={
        "warehouse": warehouse,
        "source": {"format": "kafka", "bootstrap": kafka.bootstrap, "topic": topic,
                   "value": {"format": "json", "schema": "px DOUBLE, ts STRING"},
                   "options": {"maxOffsetsPerTrigger": PER_BATCH}}})
    feed = load(spec, spark=faulty_spark)
    # batch 0 creates the tables (Spark writes the held table's first commit); the faults
    # meet the commits waterline's own writer makes for the batches after it
    produce(kafka.bootstrap, topic, [(0, k, quote_value(px, h)) for k, px, h in FIRST[:PER_BATCH]])
    feed.stream(once=True)
    produce(kafka.bootstrap, topic, [(0, k, quote_value(px, h)) for k, px, h in FIRST[PER_BATCH:]])

    held_commit = r"/quotes/held" + COMMIT
    rules = proxy.add(
        # batch 1's held commit: the store applies it, the answer is lost; the writer's retry
        # must read it back as its own, not as a lost race
        Rule("drop_response", held_commit),
        Rule("status_after", r"/quotes/tiers/realtime" + COMMIT, times=2),  # applied, then 503 twice
        Rule("drop_response", r"/quotes/tiers/delayed_15m" + COMMIT),
        Rule("reset", r"/quotes/held/.*\.parquet", method="PUT", times=2),  # Spark's S3A writes
    )
    run = feed.stream(once=True)
    assert all(rule.hits for rule in rules), [(r.action, r.path, r.hits) for r in rules]
    assert [b.batch_id for b in run.batches if not b.skipped] == [1, 2], run.summary()
    proxy.clear()
    _check(feed, FIRST)

    # A held commit the store never answers: the drain fails (the outcome is not assumed), and
    # the next drain, with the store back, applies that batch once.
    produce(kafka.bootstrap, topic, [(0, k, quote_value(px, h)) for k, px, h in LATER])
    [storm] = proxy.add(Rule("status", held_commit, times=10_000))
    with pytest.raises(OutcomeUnknown):
        feed.stream(once=True)
    assert storm.hits > 1
    proxy.clear()
    assert applied_batch(feed.spec, "source") == 2
    again = feed.stream(once=True)
    assert [b.batch_id for b in again.batches if not b.skipped] == [3], again.summary()
    _check(feed, FIRST + LATER)
