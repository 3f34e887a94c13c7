"""`waterline maintain` on a local warehouse: compaction, retention, checkpoints, vacuum, stages.

Time passing is the files' modification times set back (what log cleanup and
vacuum judge by), so "two hours later" needs no waiting; everything else is a
real feed, real Spark commits and real deltalake reads.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.engine.feedkit import PAYLOAD, far_future_clock, make_spec, read_tier, write_partition
from tests.engine.model import MINUTE, POLICIES, FeedModel, expected_tier
from tests.engine.test_release_differential import BASE_US, _iso

pytestmark = pytest.mark.spark

TIERS = {"d10": POLICIES["d10"], "emb": POLICIES["emb"]}
HOUR_S = 3600
SPEC_OVERRIDES = {"maintenance": {"time_travel": "1 hour", "every": "15 minutes"}}


def _row(key: int, minute: int, v: str, embargo_minute: int | None = None) -> dict:
    return {"id": key, "event_time": _iso(BASE_US + minute * MINUTE), "status": "final",
            "embargo_until": None if embargo_minute is None else _iso(BASE_US + embargo_minute * MINUTE), "v": v}


def _model_row(row: dict) -> dict:
    from waterline.clock import parse_instant

    return {**row, "event_time": parse_instant(row["event_time"]),
            "embargo_until": None if row["embargo_until"] is None else parse_instant(row["embargo_until"])}


@pytest.fixture(scope="module")
def _grown_once(spark, tmp_path_factory):
    """The grown feed, built once per module (five Spark releases): each test gets a copy."""
    from waterline import Feed

    root = tmp_path_factory.mktemp("grown")
    spec = make_spec(root, TIERS, **SPEC_OVERRIDES)
    feed = Feed(spec, spark=spark, clock=far_future_clock())
    model = FeedModel(TIERS)
    rows: list[dict] = []
    for i in range(5):
        rows.append(_row(i, 5 * i, f"v{i}", embargo_minute=5 * i + 1))
        write_partition(root, "a", rows)
        feed.ingest("a")
        model.ingest("a", [_model_row(r) for r in rows])
        feed.release(as_of=BASE_US + (5 * i + 12) * MINUTE)
    return root, model


@pytest.fixture
def grown(_grown_once, spark, tmp_path):
    """A feed after five releases that each added a file to partition a of every tier.

    A copy of the module's feed (file times kept: what vacuum and log cleanup judge by);
    Delta paths inside the logs are relative, so the copy is a feed of its own."""
    from waterline import Feed

    built, model = _grown_once
    root = tmp_path / "feed"
    shutil.copytree(built, root)
    spec = make_spec(root, TIERS, **SPEC_OVERRIDES)
    return Feed(spec, spark=spark, clock=far_future_clock()), copy.deepcopy(model)


def _age(folder: Path, seconds: float, *, names: tuple[str, ...] = ()) -> None:
    """Set the modification time of files under ``folder`` (those named, or all) ``seconds`` back."""
    then = time.time() - seconds
    for path in folder.rglob("*"):
        if path.is_file() and (not names or path.name in names):
            os.utime(path, (then, then))


def _equals_semantics(feed, model) -> None:
    from waterline.engine.delta.table_log import TableLog
    from waterline.engine.tables import feed_tables

    for tier in feed.tiers:
        state = feed_tables.tier_state(TableLog.open(feed.tier_path(tier)))
        got = {k: (tuple(r[c] for c in PAYLOAD), r["_wl_seq"]) for k, r in read_tier(None, feed.spec, tier).items()}
        assert got == expected_tier(model, tier, state.w, state.seq), tier


def test_maintain_compacts_without_change_rows_and_sets_the_retention(grown):
    from waterline.engine.delta.table_log import TableLog
    from waterline.engine.tables import feed_tables

    feed, model = grown
    before = {t: feed.read(t).sort_by("id").to_pylist() for t in feed.tiers}
    log = TableLog.open(feed.tier_path("d10"))
    assert len(log.add_files()) == 5
    result = feed.maintain()
    d10 = result.tables["d10"]
    assert (d10.files_before, d10.files_after, d10.files_compacted) == (5, 1, 5)
    assert d10.checkpoint_version == TableLog.open(feed.tier_path("d10")).version
    assert set(result.tables) == {"d10", "emb", "held"}
    log = TableLog.open(feed.tier_path("d10"))
    assert log.configuration["delta.logRetentionDuration"] == "interval 3600 seconds"
    assert log.configuration["delta.deletedFileRetentionDuration"] == "interval 3600 seconds"
    # the compaction, then its files committed again with waterline's statistics (Spark's are off)
    compacted, restated = sorted(int(c["version"]) for c in log.history() if c["operation"] == "OPTIMIZE")
    assert restated == compacted + 1
    assert log.changes(compacted, restated).num_rows == 0  # dataChange false: no change-feed rows
    from waterline.engine.delta.actions import AddFile
    from waterline.engine.delta.table_log import read_commit

    bare = [a for a in read_commit(feed.tier_path("d10"), compacted) if isinstance(a, AddFile)]
    described = [a for a in read_commit(feed.tier_path("d10"), restated) if isinstance(a, AddFile)]
    assert [a.stats for a in bare] == [None] and [a.path for a in described] == [a.path for a in bare]
    assert '"minValues"' in described[0].stats and not described[0].data_change
    assert {t: feed.read(t).sort_by("id").to_pylist() for t in feed.tiers} == before
    assert feed_tables.tier_state(log).w == BASE_US + 32 * MINUTE  # the state survives a commit that carries none
    # releases go on after it, on the fast path (one commit of waterline's per tier)
    rows = [_row(i, 5 * i, f"v{i}", embargo_minute=5 * i + 1) for i in range(5)] + [_row(9, 30, "w")]
    write_partition(Path(feed.spec.base_dir), "a", rows)
    feed.ingest("a")
    model.ingest("a", [_model_row(r) for r in rows])
    feed.release(as_of=BASE_US + 45 * MINUTE)
    assert TableLog.open(feed.tier_path("d10")).history(1)[0]["operation"] == "WATERLINE RELEASE"
    _equals_semantics(feed, model)


def test_maintain_vacuums_and_cleans_the_log_past_the_retention_only(grown):
    from waterline.engine.delta.stages import STAGE_DIR
    from waterline.engine.delta.table_log import TableLog
    from waterline.engine.tables import feed_tables

    feed, model = grown
    tier = Path(feed.tier_path("emb"))
    stray = tier / "_wl_partition=a" / "part-stray-c000.snappy.parquet"  # a file no commit ever named
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"not data")
    fresh_stage = tier / STAGE_DIR / ("f" * 32) / "data" / "part-0.parquet"
    fresh_stage.parent.mkdir(parents=True)
    fresh_stage.write_bytes(b"a stage about to commit")
    feed.maintain(tier="emb")  # compacts; the files it replaced are tombstones, kept for time travel
    version_before = TableLog.open(str(tier)).version
    markers = [p for p in tier.rglob("task-committed")]
    assert markers, "waterline's output committer leaves a marker per task attempt"
    _age(tier, 2 * HOUR_S, names=(stray.name, "task-committed"))
    _age(tier / "_delta_log", 2 * HOUR_S)  # the log before the last checkpoint is past the retention
    result = feed.maintain(tier="emb").tables["emb"]
    assert not stray.exists() and not any(p.exists() for p in markers)
    assert fresh_stage.exists()  # younger than the retention: never a vacuum's
    assert result.files_vacuumed >= 1 + len(markers) and result.log_files_removed > 0
    log = TableLog.open(str(tier))
    assert log.version >= version_before and feed_tables.tier_state(log).w == BASE_US + 32 * MINUTE
    for uri in log.file_uris():  # the snapshot is whole
        assert Path(uri.removeprefix("file://")).exists()
    _equals_semantics(feed, model)


def test_maintain_leaves_no_old_checkpoint_checksum_or_empty_folder_behind(grown):
    """Hour after hour (file times set back), log cleanup and vacuum must not leave what
    they do not delete themselves: checkpoints and checksum files older than the state the
    oldest commit is rebuilt from, hidden ``.crc`` files of vacuumed files, empty folders."""
    import re

    feed, model = grown
    tier = Path(feed.tier_path("d10"))
    rows = [_row(i, 5 * i, f"v{i}", embargo_minute=5 * i + 1) for i in range(5)]
    for hour in range(3):
        rows.append(_row(10 + hour, 40 + hour, "late"))
        write_partition(Path(feed.spec.base_dir), "a", rows)
        feed.ingest("a")
        model.ingest("a", [_model_row(r) for r in rows])
        feed.release(as_of=BASE_US + (60 + hour) * MINUTE)
        feed.maintain(tier="d10")
        _age(tier, 2 * HOUR_S)
    feed.maintain(tier="d10")
    names = [p.name for p in (tier / "_delta_log").iterdir() if p.is_file()]
    version = {n: int(m.group(1)) for n in names if (m := re.match(r"^\.?(\d{20})\.", n))}
    oldest = min(v for n, v in version.items() if n.endswith(".json") and not n.startswith("."))
    base = max(v for n, v in version.items() if ".checkpoint" in n and not n.startswith(".") and v <= oldest)
    assert oldest > 0 and min(version.values()) == base, sorted(names)
    leftovers = [p for p in tier.rglob(".*.crc") if "_delta_log" not in p.parts
                 and not p.with_name(p.name[1:].removesuffix(".crc")).exists()]
    assert leftovers == []
    assert [d for d in tier.rglob("*") if d.is_dir() and not any(d.iterdir()) and "_delta_log" not in d.parts] == []
    assert (tier / "_delta_log" / "_staged_commits").is_dir()  # Delta's own, kept
    _equals_semantics(feed, model)
    assert {r["id"] for r in feed.read("d10").to_pylist()} >= {10, 11, 12}


def test_maintain_one_tier_from_the_command_line(grown):
    feed, _ = grown
    spec_file = Path(feed.spec.base_dir) / "feed.yaml"
    import yaml

    spec_file.write_text(yaml.safe_dump(feed.spec.to_dict()))
    waterline = Path(sys.executable).with_name("waterline")
    done = subprocess.run([str(waterline), "maintain", str(spec_file), "--tier", "d10", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert set(out["tables"]) == {"d10"} and out["tables"]["d10"]["files_after"] == 1
    bad = subprocess.run([str(waterline), "maintain", str(spec_file), "--tier", "nope"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown tier 'nope'" in bad.stderr and "Traceback" not in bad.stderr


def test_a_sharing_url_may_not_outlive_the_files_maintenance_keeps(tmp_path):
    from waterline.errors import WaterlineError
    from waterline.sharing.server import SharingServer
    from waterline.sharing.tokens import TokenStore

    spec = make_spec(tmp_path, TIERS, maintenance={"time_travel": "1 hour"}, audiences={"acme": ["d10"]})
    with pytest.raises(WaterlineError, match=r"--url-ttl 7200s is longer than its maintenance.time_travel"):
        SharingServer([spec], TokenStore(tmp_path / "tokens.json"), url_ttl_seconds=7200)
    SharingServer([spec], TokenStore(tmp_path / "tokens.json"), url_ttl_seconds=900)
