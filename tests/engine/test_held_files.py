"""File statistics settle a release's outlook exactly and never miss a candidate partition.

Pure Python: random held files (rows with visibility intervals, seqs, partitions),
their min/max statistics (sometimes missing), compared with brute force over the rows.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from waterline.engine.core.held_stats import HeldFile, candidate_scope, outlook, step_files
from waterline.semantics import NEG_INF, POS_INF, takeover

T = "t"


def _last(vis) -> int:
    finite = [b for iv in vis for b in iv if NEG_INF < b < POS_INF]
    return max(finite, default=NEG_INF)


def _next_boundary(vis, w) -> int | None:
    after = [b for iv in vis for b in iv if w < b < POS_INF]
    return min(after, default=None)


bound = st.one_of(st.integers(0, 40), st.just(NEG_INF), st.just(POS_INF))


@st.composite
def vis(draw):
    points = sorted(draw(st.lists(st.integers(0, 40), max_size=4, unique=True)))
    if draw(st.booleans()):
        points = [NEG_INF] + points
    if len(points) % 2:
        points.append(POS_INF)
    return tuple((points[i], points[i + 1]) for i in range(0, len(points), 2))


# partition, seq, vis, removal; a removal's visibility is empty in held (ingest writes it so)
row = st.tuples(st.sampled_from("abc"), st.integers(1, 6), vis(), st.booleans()).map(
    lambda r: (r[0], r[1], () if r[3] else r[2], r[3])
)


def _files(rows_by_file, drop_stats):
    files = []
    for rows, drop in zip(rows_by_file, drop_stats):
        taus = [takeover(v, removed=r) for _, _, v, r in rows]
        lasts = [NEG_INF if r else _last(v) for _, _, v, r in rows]
        seqs = [s for _, s, _, _ in rows]
        files.append(HeldFile(
            partition=rows[0][0], records=None if drop == "records" else len(rows),
            seq_min=None if drop == "seq" else min(seqs), seq_max=None if drop == "seq" else max(seqs),
            tau_min={T: None if drop == "tau" else min(taus)}, tau_max={T: None if drop == "tau" else max(taus)},
            last_max={T: None if drop == "last" else max(lasts)},
        ))
    return files


files_strategy = st.lists(
    st.tuples(st.lists(row, min_size=1, max_size=5),
              st.sampled_from([None, None, None, "records", "seq", "tau", "last"])),
    max_size=8,
).map(lambda fs: [([(rows[0][0], s, v, r) for _, s, v, r in rows], drop) for rows, drop in fs])


@settings(max_examples=300, deadline=None)
@given(fs=files_strategy, w=st.integers(0, 40), seq=st.integers(1, 6))
def test_outlook_from_statistics_is_exact(fs, w, seq):
    files = _files([rows for rows, _ in fs], [drop for _, drop in fs])
    known = outlook(files, T, w=w, seq=seq)
    rows = [r for rows, _ in fs for r in rows if r[1] <= seq]
    # What the release computes: statistics for settled files, a row scan of the open partitions.
    scanned = [r for r in rows if r[0] in known.open_partitions]
    pending = known.pending + sum(1 for _, _, v, rem in scanned if takeover(v, removed=rem) > w)
    nexts = [known.next_due] + [_next_boundary(v, w) for _, _, v, rem in scanned if not rem]
    nexts = [x for x in nexts if x is not None]
    assert pending == sum(1 for _, _, v, rem in rows if takeover(v, removed=rem) > w)
    expected_next = [_next_boundary(v, w) for _, _, v, rem in rows if not rem]
    expected_next = [x for x in expected_next if x is not None]
    assert min(nexts, default=None) == min(expected_next, default=None)


@settings(max_examples=300, deadline=None)
@given(fs=files_strategy, low=st.integers(0, 40), dw=st.integers(0, 20), s0=st.integers(0, 6))
def test_candidate_scope_covers_every_candidate_and_its_governing_version(fs, low, dw, s0):
    w = low + dw
    files = _files([rows for rows, _ in fs], [drop for _, drop in fs])
    scope = candidate_scope(files, T, low=low, s0=s0, w=w)
    rows = [r for rows, _ in fs for r in rows]
    for partition, s, v, removed in rows:
        tau = takeover(v, removed=removed)
        crossed = any(low < b <= w for iv in v for b in iv)
        if tau <= w and (s > s0 or crossed):
            assert partition in scope.partitions
            assert scope.seq_floor is None or s >= scope.seq_floor
            # the governing version of the candidate's partition (rows stand for one key per
            # partition here): the due one with the greatest seq, never below the floor
            governing = max(q for p, q, v2, r2 in rows if p == partition and takeover(v2, removed=r2) <= w)
            assert scope.seq_floor is None or governing >= scope.seq_floor


@settings(max_examples=300, deadline=None)
@given(fs=files_strategy, low=st.integers(0, 40), dw=st.integers(0, 20), s0=st.integers(0, 6), seq=st.integers(1, 6))
def test_step_files_hold_every_row_a_release_reads_and_settle_the_rest_exactly(fs, low, dw, s0, seq):
    """A release that reads files (`step_files`) instead of partitions sees every row its
    candidates and governing versions come from, and its outlook (the read rows with a
    boundary after W, plus the settled files) equals brute force over every row."""
    w = low + dw
    files = _files([rows for rows, _ in fs], [drop for _, drop in fs])
    scope = candidate_scope(files, T, low=low, s0=s0, w=w)
    read = step_files(files, T, w=w, seq=seq, scope=scope)
    read_ids = {id(f) for f in read.files}
    read_rows = [r for f, (rows, _) in zip(files, fs) if id(f) in read_ids for r in rows if r[1] <= seq]
    rows = [r for rows, _ in fs for r in rows if r[1] <= seq]
    for r in rows:
        partition, s, v, removed = r
        if partition in scope.partitions and takeover(v, removed=removed) <= w and (
                scope.seq_floor is None or s >= scope.seq_floor):
            assert r in read_rows  # an input of `desired_rows`
    open_rows = [r for r in read_rows if (NEG_INF if r[3] else _last(r[2])) > w]
    pending = read.pending + sum(1 for _, _, v, rem in open_rows if takeover(v, removed=rem) > w)
    assert pending == sum(1 for _, _, v, rem in rows if takeover(v, removed=rem) > w)
    nexts = [read.next_due] + [_next_boundary(v, w) for _, _, v, rem in open_rows if not rem]
    expected = [_next_boundary(v, w) for _, _, v, rem in rows if not rem]
    assert min((x for x in nexts if x is not None), default=None) == min((x for x in expected if x is not None),
                                                                         default=None)
    counts = [f.records for f in read.files]
    assert read.rows == (None if None in counts else sum(counts))


def test_candidate_scope_floor_skips_the_history_of_a_tier_released_every_batch():
    def f(seq, tau, last):
        return HeldFile(partition="d", records=10, seq_min=seq, seq_max=seq,
                        tau_min={T: tau}, tau_max={T: tau}, last_max={T: last})

    # a real-time tier (due at once, no boundary after its start): seqs 1..5 released at s0=5
    files = [f(s, NEG_INF, NEG_INF) for s in range(1, 7)]
    assert candidate_scope(files, T, low=100, s0=5, w=200).seq_floor == 6
    missing = [*files, HeldFile(partition="d", records=1, seq_min=None, seq_max=None,
                                tau_min={T: NEG_INF}, tau_max={T: NEG_INF}, last_max={T: NEG_INF})]
    assert candidate_scope(missing, T, low=100, s0=5, w=200).seq_floor is None
    assert candidate_scope(files, T, low=100, s0=6, w=200) == candidate_scope([], T, low=100, s0=6, w=200)


def test_single_ingest_partitions_need_every_file_from_one_seq():
    def f(partition, lo, hi):
        return HeldFile(partition=partition, records=1, seq_min=lo, seq_max=hi,
                        tau_min={}, tau_max={}, last_max={})

    files = [f("a", 3, 3), f("a", 3, 3), f("b", 1, 1), f("b", 2, 2), f("c", 1, 2), f("d", None, None), f("e", 4, 4)]
    from waterline.engine.core.held_stats import single_ingest_partitions

    assert single_ingest_partitions(files) == {"a", "e"}
