"""A small, bounded version of `python -m bench.sharing`: 8 concurrent clients (the official
client and raw HTTP) read snapshots, time travel and changes on 127.0.0.1 while releases
commit; every read shows the oracle's rows at one table version, and no request fails.
Correctness only: no timing is asserted (bench/sharing.py and docs/benchmarks.md have those)."""

from __future__ import annotations

import pytest

from bench.sharing import report, run_load

pytestmark = pytest.mark.spark

pytest.importorskip("delta_sharing")


def test_concurrent_readers_see_one_consistent_version_while_releases_commit(spark, tmp_path):
    result = run_load(spark, tmp_path, clients=8, releases=3, rows_per_partition=60, max_seconds=300,
                      max_requests=400, think_ms=100, server_mode="thread", settle_seconds=1.0,
                      log=lambda _m: None)
    summary = report(result)
    assert result["releases"] == 3, summary
    assert result["failures"] == [], summary
    assert result["inconsistent"] == [], summary
    assert result["server_errors"] == 0, summary
    assert set(result["reads_by_kind"]) == {"snapshot", "changes", "travel", "raw query"}, summary
    assert result["reads_checked"] >= 16, summary
