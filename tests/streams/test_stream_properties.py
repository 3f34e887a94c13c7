"""Property: random record sequences (revisions, tombstones, moves across days, two Kafka
partitions) through a real broker and Spark Structured Streaming, released on a random
schedule, leave every tier equal to `waterline.semantics` (stream_batch -> versions ->
tier_state). Each round of records is one micro-batch (AvailableNow drains it in one)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from tests.engine.feedkit import local_reads
from tests.streams.kafkakit import iso, new_topic, produce, stream_spec
from waterline import Feed
from waterline import semantics as S
from waterline.spec import load_spec

EXAMPLES = int(os.environ.get("WATERLINE_STREAM_EXAMPLES", "2"))
DAY = 1_767_571_200_000_000  # 2026-01-05T00:00:00Z
MIN = 60_000_000
TIMES = [DAY + 23 * 60 * MIN + 50 * MIN, DAY + 24 * 60 * MIN + 5 * MIN, DAY + 24 * 60 * MIN + 40 * MIN]
TIERS = {
    "realtime": "TRUE",
    "delayed_15m": "event_time + INTERVAL 15 MINUTES <= WATERLINE()",
    "last_30m": "event_time <= WATERLINE() AND WATERLINE() < event_time + INTERVAL 30 MINUTES",
}


def _vis(tier: str, ts: int) -> tuple[S.Interval, ...]:
    branch = {"realtime": S.branch_interval(True, [], []),
              "delayed_15m": S.branch_interval(True, [(ts + 15 * MIN, False)], []),
              "last_30m": S.branch_interval(True, [(ts, False)], [(ts + 30 * MIN, True)])}[tier]
    return S.visibility([branch])


class MutableClock:
    """The trusted clock of the run, set by the test before each round."""

    def __init__(self, now: int) -> None:
        self.now = now

    def now_us(self) -> int:
        return self.now


record = st.tuples(st.integers(0, 1), st.sampled_from("abcd"),
                   st.one_of(st.none(), st.tuples(st.integers(1, 9), st.sampled_from(TIMES))))
# a round's batch and release read with Spark jobs ("0") or on the driver (the default)
rounds = st.lists(st.tuples(st.lists(record, min_size=1, max_size=8),
                            st.sampled_from([DAY + 24 * 60 * MIN + m * MIN for m in (0, 10, 25, 50, 80)]),
                            st.sampled_from([None, "0"])),
                  min_size=1, max_size=3)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
@given(plan=rounds)
# both ways in one run, whatever the draws: a round in Spark, then one on the driver reading what Spark wrote
@example(plan=[([(0, "a", (3, TIMES[0])), (1, "b", (5, TIMES[2])), (0, "c", (1, TIMES[1]))], DAY + 24 * 60 * MIN, "0"),
               ([(1, "a", (4, TIMES[2])), (0, "b", None), (1, "c", (1, TIMES[1])), (0, "d", (2, TIMES[0]))],
                DAY + 24 * 60 * MIN + 25 * MIN, None)])
def test_stream_rounds_released_on_a_schedule_equal_the_semantics(kafka, spark, tmp_path_factory, plan):
    root = tmp_path_factory.mktemp("prop")
    topic = new_topic(kafka.bootstrap, partitions=2)
    clock = MutableClock(DAY)
    feed = Feed(load_spec(stream_spec(root, kafka.bootstrap, topic, tiers=TIERS)), spark=spark, clock=clock)
    versions: list[S.Version] = []
    current: dict = {}
    offsets = {0: 0, 1: 0}
    w = None
    for seq, (records, at, reads) in enumerate(plan, start=1):
        produce(kafka.bootstrap, topic, [(p, k, None if v is None else {"px": float(v[0]), "ts": iso(v[1])})
                                         for p, k, v in records])
        stream = []
        for p, k, v in records:
            stream.append(S.StreamRecord(key=k, partition=None if v is None else iso(v[1])[:10],
                                         payload=None if v is None else {"px": float(v[0]), "ts": v[1]},
                                         source_partition=p, offset=offsets[p]))
            offsets[p] += 1
        appended = S.stream_batch(current, stream)
        current = S.stream_current(current, appended)
        versions += [S.Version(identity=identity, seq=seq, payload=payload,
                               vis={} if payload is None else {t: _vis(t, payload["ts"]) for t in TIERS})
                     for identity, payload in appended]
        clock.now = max(clock.now, at)
        with local_reads(reads):
            run = feed.stream(once=True)
            assert len([b for b in run.batches if not b.skipped]) == 1, "one round, one micro-batch"
            assert run.versions_written == len(appended)
            feed.release()
        w = clock.now
        for tier in TIERS:
            want = {identity: v.payload["px"] for identity, v in S.tier_state(versions, tier, w).items()}
            rows = feed.read(tier, columns=["id", "px", "_wl_partition"]).to_pylist()
            got = {(r["_wl_partition"], r["id"]): r["px"] for r in rows}
            assert got == want, f"tier {tier} at {iso(w)} after round {seq}"
