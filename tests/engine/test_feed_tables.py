"""`FeedTables`: one handle per operation on a feed's tables. A table is opened on first use
and its snapshot kept until `refresh`, so every question of one step reads the same version;
the paths are the spec's. Real Delta tables (deltalake), no JVM."""

from __future__ import annotations

import pyarrow as pa
from deltalake import write_deltalake

from tests.engine.feedkit import make_spec
from waterline.engine.tables.feed_tables import FeedTables


def _append(path: str, x: int) -> None:
    write_deltalake(path, pa.table({"x": [x]}), mode="append")


def test_a_snapshot_is_kept_until_refreshed(tmp_path):
    spec = make_spec(tmp_path, {"rt": "TRUE", "d10": "TRUE"})
    tables = FeedTables.open(spec)
    assert (tables.held_path, tables.tier_path("rt"), tables.quarantine_path) == (
        spec.held_path, spec.tier_path("rt"), spec.quarantine_path)
    _append(spec.tier_path("rt"), 1)
    first = tables.tier("rt")
    assert first.version == 0 and tables.tier("rt") is first  # opened once, then kept
    _append(spec.tier_path("rt"), 2)
    assert tables.tier("rt").version == 0  # another commit: the operation still reads its snapshot
    assert tables.refresh(spec.tier_path("rt")).tier("rt").version == 1
    assert tables.log(spec.tier_path("rt"), version=0).version == 0  # time travel beside the latest


def test_refresh_names_the_tables_it_forgets(tmp_path):
    spec = make_spec(tmp_path, {"rt": "TRUE", "d10": "TRUE"})
    tables = FeedTables.open(spec)
    for tier in ("rt", "d10"):
        _append(spec.tier_path(tier), 1)
    kept = tables.tier("d10")
    tables.tier("rt")
    for tier in ("rt", "d10"):
        _append(spec.tier_path(tier), 2)
    tables.refresh(spec.tier_path("rt"))
    assert (tables.tier("rt").version, tables.tier("d10").version) == (1, 0) and tables.tier("d10") is kept
    tables.refresh()  # every table
    assert tables.tier("d10").version == 1


def test_absent_tables_answer_with_initial_states(tmp_path):
    tables = FeedTables.open(make_spec(tmp_path, {"rt": "TRUE"}))
    assert not tables.held.exists and not tables.tier("rt").exists and not tables.quarantine.exists
    assert tables.held_state().seq == 0 and tables.tier_states()["rt"].w is None
    assert tables.held_files() == [] and tables.held_partitions() == set()
    assert tables.states_since(after_seq=0) == [] and tables.last_ingest_state("2026-01-05") is None
