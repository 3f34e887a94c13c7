"""Tier snapshots are opened once per commit, and a new commit is seen by the next request
(real Delta tables written by ``deltalake``, no Spark)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from waterline.sharing.locations import LocalTier
from waterline.sharing.protocol import ShareError
from waterline.sharing.signing import FileSigner
from waterline.sharing.tables import Snapshots


def _rows(n: int) -> pa.Table:
    return pa.table({"id": list(range(n))})


@pytest.fixture
def tier(tmp_path):
    root = tmp_path / "tiers" / "t"
    return str(root), LocalTier(root=root, share="f", tier="t", signer=FileSigner(b"k" * 32, 60))


def test_a_tier_is_opened_again_only_after_a_commit(tier):
    path, where = tier
    snapshots = Snapshots()
    assert snapshots.latest(path, where.has_commit) is None  # no table yet: nothing opened, nothing kept
    write_deltalake(path, _rows(1))
    first = snapshots.latest(path, where.has_commit)
    assert (first.version(), snapshots.opened) == (0, 1)
    with ThreadPoolExecutor(4) as pool:  # requests between commits share the opened snapshot
        seen = list(pool.map(lambda _: snapshots.latest(path, where.has_commit), range(20)))
    assert all(t is first for t in seen) and snapshots.opened == 1
    write_deltalake(path, _rows(2), mode="append")
    second = snapshots.latest(path, where.has_commit)
    assert (second.version(), snapshots.opened) == (1, 2)
    assert len(second.file_uris()) == 2 and len(first.file_uris()) == 1  # the old snapshot was not moved


def test_older_versions_are_opened_once_and_never_move(tier):
    path, where = tier
    for n in range(3):
        write_deltalake(path, _rows(n + 1), mode="append")
    snapshots = Snapshots(kept=2)
    latest = snapshots.latest(path, where.has_commit)
    assert snapshots.at(path, 2, latest) is latest
    v0 = snapshots.at(path, 0, latest)
    assert v0.version() == 0 and snapshots.at(path, 0, latest) is v0 and snapshots.opened == 2
    snapshots.at(path, 1, latest)
    assert snapshots.at(path, 0, latest) is v0  # the most recently used are kept
    with pytest.raises(ShareError, match="after the table's latest version 2"):
        snapshots.at(path, 3, latest)
    times = snapshots.commit_times(path, latest)
    assert sorted(times) == [0, 1, 2] and snapshots.commit_times(path, latest) is times
