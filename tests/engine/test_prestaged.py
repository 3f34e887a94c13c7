"""Pre-staged releases: files written before the instant, one commit per tier at it (real Spark + Delta).

Readers poll the tier with `deltalake` and with Spark every ~50 ms from before
staging until after the instant; a read that finished before the instant must
not contain the row due at it, whatever was staged by then. No time assertions:
only orderings (a read's end against the instant, a commit against the instant).
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.engine.feedkit import _micros, make_spec, write_partition
from waterline.clock import SystemClock, format_instant
from waterline.engine.delta.commit import ENGINE_INFO
from waterline.engine.delta.stages import STAGE_DIR
from waterline.engine.delta.storage import delta_table
from waterline.engine.proof.timeliness import appearances
from waterline.engine.ingest.ingest import ingest
from waterline.engine.release.prearmed import release_when_due
from waterline.engine.release.release import release

pytestmark = pytest.mark.spark
SECOND = 1_000_000
TIERS = {"emb": "embargo_until <= WATERLINE()", "rt": "TRUE"}


def _feed(spark, root, dues: dict[int, int]):
    spec = make_spec(root, TIERS)
    write_partition(root, "a", [
        {"id": i, "event_time": format_instant(due), "status": "final", "embargo_until": format_instant(due), "v": "x"}
        for i, due in dues.items()
    ])
    ingest(spark, spec, "a", clock=SystemClock())
    return spec


def _poll(read, seen: list, stop: threading.Event) -> None:
    while not stop.is_set():
        ids = read()
        seen.append((time.time_ns() // 1000, ids))  # when the read had finished
        time.sleep(0.05)


def test_a_polling_reader_never_sees_a_staged_row_before_its_instant(spark, tmp_path):
    now = SystemClock().now_us()
    spec = _feed(spark, tmp_path, {0: now - 3600 * SECOND, 2: now + 7200 * SECOND})
    release(spark, spec, clock=SystemClock())  # row 0 is out before the run starts
    # The instant is set after the first ingest and release, whose time on 2 busy cores is
    # unknown; staging takes seconds: room before it.
    due = (SystemClock().now_us() // SECOND + 30) * SECOND
    write_partition(tmp_path, "b", [
        {"id": 1, "event_time": format_instant(due), "status": "final", "embargo_until": format_instant(due), "v": "x"},
    ])
    ingest(spark, spec, "b", clock=SystemClock())
    path = spec.tier_path("emb")
    readers = {
        "deltalake": lambda: set(delta_table(path).to_pyarrow_table(columns=["id"]).column("id").to_pylist()),
        "spark": lambda: {r["id"] for r in spark.read.format("delta").load(path).select("id").collect()},
    }
    seen: dict[str, list] = {name: [] for name in readers}
    stop = threading.Event()
    threads = [threading.Thread(target=_poll, args=(read, seen[name], stop), daemon=True)
               for name, read in readers.items()]
    for t in threads:
        t.start()
    try:
        done = release_when_due(spark, spec, due_us=due)
        time.sleep(0.5)  # a few reads after the commit
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert done.prestaged and done.reached and done.result.w_us == due
    assert done.result.tiers["emb"].released == 1
    staged = list((tmp_path / "wh" / "f" / "tiers" / "emb" / STAGE_DIR).rglob("*.parquet"))
    assert staged and min(p.stat().st_mtime_ns // 1000 for p in staged) < due  # written before the instant
    for name, reads in seen.items():
        before = [ids for at, ids in reads if at < due]
        after = [ids for at, ids in reads if at > done.finished_us]
        assert before and after, f"{name}: no read on one side of the instant"
        assert all(ids == {0} for ids in before), f"{name} saw a row before its instant"
        assert after[-1] == {0, 1}
    seen_rows = appearances(spec, "emb", lambda row: _micros(row["embargo_until"]))
    assert sorted(a.row["id"] for a in seen_rows) == [0, 1] and not any(a.early for a in seen_rows)
    last = delta_table(path).history(1)[0]
    assert last["engineInfo"] == ENGINE_INFO and last["timestamp"] * 1000 >= due


def test_a_stage_overtaken_by_an_ingest_is_discarded_and_the_release_plans_again(spark, tmp_path):
    from waterline.clock import FixedClock
    from waterline.engine.release.prestaged import commit_staged, discard
    from waterline.engine.tables.lease import feed_lease
    from waterline.engine.release.prestage import stage

    due = 1_800_000_000_000_000
    spec = _feed(spark, tmp_path, {1: due, 2: due + 60 * SECOND})
    staged = stage(spark, spec, w_us=due, clock=FixedClock(due - 10 * SECOND))
    assert staged is not None and staged.files > 0
    write_partition(tmp_path, "a", [  # a correction lands while the run waits
        {"id": 1, "event_time": format_instant(due), "status": "final", "embargo_until": format_instant(due), "v": "y"},
    ])
    ingest(spark, spec, "a", clock=FixedClock(due - 5 * SECOND))
    with feed_lease(spec.feed_dir, feed=spec.feed) as lease:
        assert commit_staged(spec, staged, clock=FixedClock(due), lease=lease).result is None
    discard(spec, staged)
    assert not (tmp_path / "wh" / "f" / "tiers" / "emb" / STAGE_DIR / staged.token).exists()
    result = release(spark, spec, as_of_us=due, clock=FixedClock(due))
    rows = delta_table(spec.tier_path("emb")).to_pyarrow_table(columns=["id", "v"]).to_pylist()
    assert rows == [{"id": 1, "v": "y"}] and result.tiers["emb"].released == 1


def test_a_release_with_candidates_but_no_row_to_show_leaves_no_staged_file(spark, tmp_path):
    """Rows withdrawn before their instant: the tier's new partition gets no row, the commit
    records the state alone, and no staged file is left behind under a committed token."""
    from waterline.clock import FixedClock

    due = 1_800_000_000_000_000
    spec = _feed(spark, tmp_path, {1: due, 2: due})
    write_partition(tmp_path, "a", [  # 1 and 2 withdrawn; 3 is embargoed past the release
        {"id": 3, "event_time": format_instant(due), "status": "final",
         "embargo_until": format_instant(due + 3600 * SECOND), "v": "x"},
    ])
    ingest(spark, spec, "a", clock=FixedClock(due - SECOND))
    result = release(spark, spec, as_of_us=due, clock=FixedClock(due))
    emb = result.tiers["emb"]
    assert (emb.released, emb.candidates, emb.w_us) == (0, 2, due)
    assert delta_table(spec.tier_path("emb")).to_pyarrow_table().num_rows == 0
    stage_root = tmp_path / "wh" / "f" / "tiers" / "emb" / STAGE_DIR
    assert not [p for p in stage_root.rglob("*") if p.is_file()]
