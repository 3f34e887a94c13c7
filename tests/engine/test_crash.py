"""Crash safety: a real SIGKILL at every phase boundary, then a re-run, equals an uninterrupted run."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.engine.crash_driver import TIERS, crash_spec, run_steps
from tests.engine.feedkit import make_spec
from waterline.engine.core import faults
from waterline.engine.delta.table_log import TableLog
from waterline.engine.spark.commits import temporary_conf
from waterline.engine.tables import feed_tables

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


def _tables(spark, root: Path, warehouse: str | None = None) -> dict:
    spec = crash_spec(root, warehouse)
    out = {}
    for tier in TIERS:
        df = spark.read.format("delta").load(spec.tier_path(tier))
        rows = sorted(tuple(r) for r in df.select("_wl_partition", "id", "v", "_wl_seq", "_wl_start", "_wl_end").collect())
        assert len({r[:2] for r in rows}) == len(rows), f"duplicated identity in {tier}"
        out[tier] = rows
    held = spark.read.format("delta").load(spec.held_path)
    out["held"] = sorted(tuple(r) for r in held.select("id", "_wl_seq", "_wl_removed", "_wl_hash").collect())
    out["w"] = {t: feed_tables.tier_state(TableLog.open(spec.tier_path(t))).w for t in TIERS}
    return out


@pytest.fixture(scope="module")
def reference(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("reference")
    run_steps(spark, root)
    return _tables(spark, root)


def _driver(root: Path, crash_step: int, point: str, warehouse: str | None = None) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, "-m", "tests.engine.crash_driver", str(root), str(crash_step), point,
         *([warehouse] if warehouse else [])],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )


def _last_step(output: str) -> int:
    return max(int(line.split()[1]) for line in output.splitlines() if line.startswith("step "))


CASES = [
    (2, faults.INGEST_BEFORE_COMMIT),
    (2, faults.INGEST_AFTER_COMMIT),
    (1, faults.RELEASE_BEFORE_MERGE),
    (3, faults.RELEASE_BETWEEN_TIERS),
]


@pytest.mark.parametrize("crash_step,point", CASES, ids=[f"step{s}-{p}" for s, p in CASES])
def test_kill_at_phase_boundary_then_rerun_converges(spark, tmp_path, reference, crash_step, point):
    run_steps(spark, tmp_path, stop=crash_step)  # the history before the crash
    proc = _driver(tmp_path, crash_step, point)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == -signal.SIGKILL, f"driver was not killed at {point}: rc={proc.returncode}"
    assert _last_step(out) == crash_step
    run_steps(spark, tmp_path, start=crash_step)  # the operator re-runs what failed, then carries on
    assert _tables(spark, tmp_path) == reference


# A feed's first writes: the first ingest creates held (its first commit), then the tiers; the
# first release commits to each. ``restart``: the step the next run starts at: the operator
# re-runs the ingest, or (the held commit landed) goes straight on with the release, which
# must then create the tiers the killed ingest did not.
FIRST_WRITES = [
    (0, faults.INGEST_BEFORE_COMMIT, 0),
    (0, faults.INGEST_AFTER_COMMIT, 1),  # held created, no tier: the release creates them
    (0, faults.CREATE_TIER_BEFORE, 1),  # held committed, no tier yet: the release creates them all
    (0, f"{faults.CREATE_BETWEEN_TIERS}@1", 0),  # one tier created: the ingest's re-run creates the rest
    (0, faults.CREATE_TIER_AFTER, 1),  # every tier created, the ingest not yet returned
    (1, faults.RELEASE_AFTER_TIERS, 1),
]


@pytest.mark.parametrize("crash_step,point,restart", FIRST_WRITES,
                         ids=[f"step{s}-{p}-restart{r}" for s, p, r in FIRST_WRITES])
def test_kill_in_a_feeds_first_writes_then_the_next_run_completes(spark, tmp_path, reference, crash_step, point,
                                                                  restart):
    _kill_and_rerun(spark, tmp_path, reference, crash_step, point, restart)


# A tier's MERGE committed by Spark and its (W_T, seq) property commit not yet: only the Spark
# path of a release has that boundary. A tier without a change data feed cannot be pre-staged
# (`staging.stage`), so the release of a feed whose tiers had it switched off takes that path.
def _without_change_data_feed(spark, root: Path) -> None:
    for tier in TIERS:
        spark.sql(f"ALTER TABLE delta.`{crash_spec(root).tier_path(tier)}` "
                  "SET TBLPROPERTIES (delta.enableChangeDataFeed = false)")


@pytest.mark.parametrize("point", [faults.RELEASE_BEFORE_PROPERTY])
def test_kill_between_a_spark_merge_and_its_property_commit_then_rerun_converges(spark, tmp_path, reference, point):
    _kill_and_rerun(spark, tmp_path, reference, 3, point, 3, before_kill=_without_change_data_feed)


# Every table made with a checkpoint interval of 2: the third release's first tier commit is
# the tier's version 2, so it checkpoints (held and the tiers carry the property from creation).
CHECKPOINT_EVERY_2 = ("spark.databricks.delta.properties.defaults.checkpointInterval", "2")


@pytest.mark.parametrize("point", [faults.CHECKPOINT_BEFORE, faults.CHECKPOINT_AFTER])
def test_kill_around_a_checkpoint_then_rerun_converges(spark, tmp_path, reference, point):
    with temporary_conf(spark, *CHECKPOINT_EVERY_2):
        _kill_and_rerun(spark, tmp_path, reference, 3, point, 3)


# On S3 (s3proxy), in one process sharing the session's s3proxy: a kill in each phase (the first
# ingest's held commit, held without tiers, between the first release's tiers, a later release,
# a checkpoint), each followed by a run that releases what an uninterrupted run does.
S3_CASES = [
    (0, faults.INGEST_BEFORE_COMMIT, 0),
    (0, faults.INGEST_AFTER_COMMIT, 1),
    (1, faults.RELEASE_BETWEEN_TIERS, 1),
    (3, faults.RELEASE_BEFORE_MERGE, 3),
    (3, faults.CHECKPOINT_BEFORE, 3),
]


@pytest.mark.parametrize("crash_step,point,restart", S3_CASES, ids=[f"step{s}-{p}" for s, p, _ in S3_CASES])
def test_kill_with_the_warehouse_in_s3_then_the_next_run_completes(s3_spark, s3proxy, tmp_path, reference,
                                                                   crash_step, point, restart):
    warehouse = s3proxy.uri(f"crash-{uuid.uuid4().hex[:6]}")
    checkpoints = point.startswith("checkpoint:")
    with temporary_conf(s3_spark, *CHECKPOINT_EVERY_2) if checkpoints else contextlib.nullcontext():
        _kill_and_rerun(s3_spark, tmp_path, reference, crash_step, point, restart, warehouse)


def _kill_and_rerun(spark, root: Path, reference: dict, crash_step: int, point: str, restart: int,
                    warehouse: str | None = None, before_kill=None) -> None:
    """The history up to ``crash_step`` (then ``before_kill(spark, root)``), that step killed at
    ``point``, then the steps from ``restart`` in this process: the tables equal ``reference``."""
    run_steps(spark, root, stop=crash_step, warehouse=warehouse)
    if before_kill is not None:
        before_kill(spark, root)
    proc = _driver(root, crash_step, point, warehouse)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == -signal.SIGKILL, f"driver was not killed at {point}: rc={proc.returncode}"
    assert _last_step(out) == crash_step
    spec = crash_spec(root, warehouse)
    missing = [t for t in TIERS if not TableLog.open(spec.tier_path(t)).exists]
    if point in (faults.INGEST_AFTER_COMMIT, faults.CREATE_TIER_BEFORE):
        assert missing == list(TIERS), "the kill left held without its tiers"
    elif crash_step == 0 and point != faults.INGEST_BEFORE_COMMIT:
        assert len(missing) < len(TIERS), "the kill came after a tier's creation"
    run_steps(spark, root, start=restart, warehouse=warehouse)
    assert _tables(spark, root, warehouse) == reference


def test_kill_at_a_random_moment_then_rerun_converges(spark, tmp_path, reference):
    """An outside kill -9 at an arbitrary instant of the second ingest."""
    run_steps(spark, tmp_path, stop=2)
    proc = _driver(tmp_path, 2, "none")
    assert proc.stdout.readline().startswith("step 2")
    time.sleep(random.Random(7).uniform(1.0, 8.0))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=600)
    if proc.returncode == 0:
        pytest.skip("the step finished before the kill landed")
    run_steps(spark, tmp_path, start=2)
    assert _tables(spark, tmp_path) == reference


@pytest.mark.parametrize("point", [faults.STAGED_BEFORE_COMMIT])
def test_kill_between_staging_and_commit_leaves_nothing_visible(spark, tmp_path, reference, point):
    """A pre-staged release killed after writing its files and before its commits: readers see
    the tiers exactly as before, the next run releases exactly what an uninterrupted history
    does, and gc deletes the stage's files and nothing else."""
    from waterline.engine.delta.stages import STAGE_DIR
    from waterline.engine.release.prestaged import orphan_stages
    from waterline.engine.upkeep.gc import gc

    run_steps(spark, tmp_path, stop=3)
    before = _tables(spark, tmp_path)
    proc = _driver(tmp_path, 3, point)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == -signal.SIGKILL, f"driver was not killed: rc={proc.returncode}"
    spec = make_spec(tmp_path, TIERS)
    staged = [p for t in TIERS for p in Path(spec.tier_path(t), STAGE_DIR).rglob("*.parquet")]
    assert staged, "the driver staged no files before the kill"
    assert _tables(spark, tmp_path) == before  # staged files are invisible: nothing committed
    run_steps(spark, tmp_path, start=3, prestaged=True)
    assert _tables(spark, tmp_path) == reference
    orphans = orphan_stages(spec, now_s=time.time(), older_than_s=0)
    assert orphans and all(len(tokens) == 1 for tokens in orphans.values())
    result = gc(spark, spec, stage_grace_s=0)
    assert result.staged_files_removed >= len(staged)
    assert not any(Path(spec.tier_path(t), STAGE_DIR, orphans[t][0]).exists() for t in orphans)
    after_gc = {k: v for k, v in _tables(spark, tmp_path).items() if k != "held"}  # gc drops dead held versions
    assert after_gc == {k: v for k, v in reference.items() if k != "held"}  # committed stages' files all stay


def test_kill_between_the_held_write_and_its_commit_leaves_files_gc_deletes(spark, tmp_path, reference):
    """An ingest killed after Spark wrote its versions' files and before its commit: the held
    table reads as before, the re-run converges, and gc deletes the files no commit names."""
    from waterline.engine.delta.stages import STAGE_DIR, orphan_tokens
    from waterline.engine.upkeep.gc import gc

    run_steps(spark, tmp_path, stop=2)
    before = _tables(spark, tmp_path)
    proc = _driver(tmp_path, 2, faults.INGEST_BEFORE_COMMIT)
    proc.communicate(timeout=600)
    assert proc.returncode == -signal.SIGKILL, f"driver was not killed: rc={proc.returncode}"
    spec = make_spec(tmp_path, TIERS)
    written = list(Path(spec.held_path, STAGE_DIR).rglob("*.parquet"))
    assert written, "the driver wrote no held files before the kill"
    assert _tables(spark, tmp_path) == before
    run_steps(spark, tmp_path, start=2)
    assert _tables(spark, tmp_path) == reference
    [orphan] = orphan_tokens(spec.held_path, now_s=time.time(), older_than_s=0)
    assert all(orphan in str(p) for p in written)
    assert gc(spark, spec, stage_grace_s=0).staged_files_removed >= len(written)
    assert not Path(spec.held_path, STAGE_DIR, orphan).exists()
    assert orphan_tokens(spec.held_path, now_s=time.time(), older_than_s=0) == []
    after_gc = {k: v for k, v in _tables(spark, tmp_path).items() if k != "held"}  # gc drops dead held versions
    assert after_gc == {k: v for k, v in reference.items() if k != "held"}


_APPLY = ("import sys; from pathlib import Path; from tests.engine.test_spec_apply_columns import _spec; "
          "from waterline import Feed; print(Feed(_spec(Path(sys.argv[1]), venue=True)).apply()[0].version)")


@pytest.mark.parametrize("point", [f"{faults.APPLY_AFTER_TABLE}@1", f"{faults.APPLY_AFTER_TABLE}@2"])
def test_kill_while_apply_adds_a_column_then_rerun_completes(spark, tmp_path, point):
    """Killed after held (@1) or held and one tier (@2) gained the column: the spec version is
    not recorded, and the next apply adds it to the tables still without it, once each."""
    from tests.engine.test_spec_apply_columns import TIERS as APPLY_TIERS
    from tests.engine.test_spec_apply_columns import Run, _row, _spec
    from tests.engine.feedkit import far_future_clock
    from waterline import Feed
    from waterline.engine.tables import applied_spec

    run = Run(spark, tmp_path)
    run.ingest("a", [_row(1, 0, "x"), _row(2, 5, "y")])
    run.release(25)
    env = dict(os.environ, PYTHONPATH=str(REPO), **{faults.ENV: point})
    killed = subprocess.run([sys.executable, "-c", _APPLY, str(tmp_path)], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    paths = [run.feed.spec.held_path, *[run.feed.spec.tier_path(t) for t in APPLY_TIERS]]
    having = [("venue", "string") in TableLog.open(p).columns() for p in paths]
    assert having == [i < int(point[-1]) for i in range(len(paths))]
    assert applied_spec.applied(run.feed.spec).version == 1  # recorded only after every table has it

    done = subprocess.run([sys.executable, "-c", _APPLY, str(tmp_path)], cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "2", done.stderr
    for path in paths:
        log = TableLog.open(path)
        assert ("venue", "string") in log.columns(), path
        assert [c["operation"] for c in log.history(50)].count("ADD COLUMNS") == 1, path
    run.feed = Feed(_spec(tmp_path, venue=True), spark=spark, clock=far_future_clock())
    run.oracle.apply(run.oracle.spec.tiers, {"v": "string", "venue": "string"}, run.oracle.now_us)
    assert run.ingest("a", [_row(1, 0, "x", "XNYS"), _row(2, 5, "y")]) == 1
    run.release(30)
