"""Property tests of stream ingest in the oracle: random record sequences with revisions,
partition moves and tombstones, cut into random batches."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from tests.semantics.examples import property_settings
from waterline.semantics import StreamRecord, collapse, stream_batch, stream_current

KEYS = st.integers(0, 4)
PAYLOADS = st.one_of(st.none(), st.fixed_dictionaries({"v": st.integers(0, 2)}))


@st.composite
def batches(draw) -> list[list[StreamRecord]]:
    """Records in 1-5 batches; offsets grow per source partition over the whole stream."""
    offsets = {0: 0, 1: 0}
    out = []
    for _ in range(draw(st.integers(1, 5))):
        batch = []
        for _ in range(draw(st.integers(0, 8))):
            sp = draw(st.integers(0, 1))
            payload = draw(PAYLOADS)
            batch.append(StreamRecord(key=draw(KEYS), partition=None if payload is None else draw(st.sampled_from(
                ["2026-01-01", "2026-01-02"])), payload=payload, source_partition=sp, offset=offsets[sp]))
            offsets[sp] += 1
        out.append(batch)
    return out


def _replay(stream: list[list[StreamRecord]]) -> tuple[dict, list[list]]:
    current: dict = {}
    appended = []
    for batch in stream:
        versions = stream_batch(current, batch)
        appended.append(versions)
        current = stream_current(current, versions)
    return current, appended


def _naive(stream: list[list[StreamRecord]]) -> dict:
    """Every record in order (batch, source partition, offset); the last per key wins."""
    state: dict = {}
    for batch in stream:
        for r in sorted(batch, key=lambda r: (r.source_partition, r.offset)):
            if r.payload is None:
                state.pop(r.key, None)
            else:
                state[r.key] = (r.partition, dict(r.payload))
    return state


@property_settings()
@given(batches())
def test_batches_end_where_replaying_every_record_does(stream):
    current, _ = _replay(stream)
    assert current == _naive(stream)


@property_settings()
@given(batches(), st.randoms(use_true_random=False))
def test_a_replayed_batch_appends_nothing_and_order_in_a_batch_does_not_matter(stream, rnd: random.Random):
    current: dict = {}
    for batch in stream:
        shuffled = list(batch)
        rnd.shuffle(shuffled)
        versions = stream_batch(current, batch)
        assert sorted(map(repr, stream_batch(current, shuffled))) == sorted(map(repr, versions))
        current = stream_current(current, versions)
        assert stream_batch(current, batch) == []  # a batch replayed after a crash changes nothing


@property_settings()
@given(batches())
def test_only_the_batch_keys_change_and_never_to_what_they_were(stream):
    current: dict = {}
    held: dict = {}  # (partition, key) -> the payload of its newest version (None: removed)
    for batch in stream:
        versions = stream_batch(current, batch)
        keys = {r.key for r in batch}
        assert {key for (_, key), _ in versions} <= keys
        assert len({identity for identity, _ in versions}) == len(versions)  # one version per identity
        for identity, payload in versions:
            assert held.get(identity) != payload or payload is None and identity not in held
            held[identity] = payload
        current = stream_current(current, versions)
        present = [key for (_, key), payload in held.items() if payload is not None]
        assert len(present) == len(set(present))  # a key lives in one partition at a time
        assert {(p, k): v for k, (p, v) in current.items()} == {i: v for i, v in held.items() if v is not None}


def test_the_last_record_of_a_key_wins_by_source_partition_then_offset():
    a = StreamRecord("k", "p", {"v": 1}, source_partition=1, offset=0)
    b = StreamRecord("k", "p", {"v": 2}, source_partition=0, offset=9)
    assert collapse([a, b])["k"] is a
    moved = stream_batch({"k": ("p", {"v": 1})}, [StreamRecord("k", "q", {"v": 1}, 0, 1)])
    assert moved == [(("p", "k"), None), (("q", "k"), {"v": 1})]
    assert stream_batch({}, [StreamRecord("gone", None, None, 0, 2)]) == []
