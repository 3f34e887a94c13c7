"""The engine on a warehouse in a real S3 server (s3proxy on loopback).

Spark writes through s3a (hadoop-aws + the AWS SDK jars `make setup` resolves);
the tier checks, `waterline status` and the release sensor read through
``deltalake`` with the same endpoint and credentials (`waterline.engine.delta.storage`).
Every tier must equal `waterline.semantics` after every release.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from tests.engine.feedkit import PAYLOAD, far_future_clock, make_spec, read_tier, write_partition
from tests.engine.model import MINUTE, POLICIES, FeedModel, expected_tier
from tests.engine.test_release_differential import BASE_US, _iso, run_histories

pytestmark = pytest.mark.spark

# Each example is one seed's random plan run on S3_HISTORIES histories at once (the local
# differential test runs 50 per example, with 6 steps); WATERLINE_S3_EXAMPLES adds seeds.
# Seed 99 re-ingests partition a twice, then releases forward, back (W stays) and to the end.
S3_HISTORIES = int(os.environ.get("WATERLINE_S3_HISTORIES", "10"))
S3_STEPS = int(os.environ.get("WATERLINE_S3_STEPS", "5"))
S3_SEEDS = (99, 424242, 20260105, 7)[: max(1, int(os.environ.get("WATERLINE_S3_EXAMPLES", "1")))]


@pytest.mark.parametrize("seed", S3_SEEDS)
def test_engine_matches_semantics_on_s3(s3_spark, s3proxy, seed):
    warehouse = s3proxy.uri(f"diff-{seed}-{uuid.uuid4().hex[:6]}")
    run_histories(s3_spark, seed, histories=S3_HISTORIES, warehouse=warehouse, steps=S3_STEPS)
    keys = s3proxy.client().list_objects_v2(Bucket=s3proxy.bucket, Prefix=warehouse.split("/", 3)[3] + "/f/held/_delta_log/")
    assert keys.get("KeyCount", 0) > 0, "the held table is not in the bucket"


def _row(key: int, minute: int, v: str, status: str = "final", embargo_minute: int | None = None) -> dict:
    return {"id": key, "event_time": BASE_US + minute * MINUTE, "status": status,
            "embargo_until": None if embargo_minute is None else BASE_US + embargo_minute * MINUTE, "v": v}


def _source(row: dict) -> dict:
    return {**row, "event_time": _iso(row["event_time"]),
            "embargo_until": None if row["embargo_until"] is None else _iso(row["embargo_until"])}


def _status_cli(spec_file: Path) -> dict:
    """`waterline status --json` in a fresh process: the AWS env of the s3proxy fixture, no JVM."""
    waterline = Path(sys.executable).with_name("waterline")
    done = subprocess.run([str(waterline), "status", str(spec_file), "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_ingest_revise_release_status_and_sensor_on_s3(s3_spark, s3proxy, tmp_path):
    from dagster import RunRequest, SkipReason

    from waterline import Feed
    from waterline.dagster.sensors import decide

    spec = make_spec(tmp_path, POLICIES, warehouse=s3proxy.uri(f"scenario-{uuid.uuid4().hex[:6]}"))
    spec_file = tmp_path / "feed.yaml"
    spec_file.write_text(yaml.safe_dump(spec.to_dict()))
    feed = Feed(spec, spark=s3_spark, clock=far_future_clock())
    model = FeedModel(POLICIES)

    def step(partition: str, rows: list[dict], release_minute: int) -> None:
        write_partition(tmp_path, partition, [_source(r) for r in rows])
        assert feed.ingest(partition).versions_written == model.ingest(partition, rows)
        decision = decide(spec, feed.status(), {})
        assert isinstance(decision, RunRequest), decision  # a new ingest on s3 makes the sensor ask
        as_of = BASE_US + release_minute * MINUTE
        feed.release(as_of=as_of)
        for tier in POLICIES:
            got = {k: (tuple(r[c] for c in PAYLOAD), r["_wl_seq"]) for k, r in read_tier(s3_spark, spec, tier).items()}
            assert got == expected_tier(model, tier, as_of), f"tier {tier} at minute {release_minute}"

    first = [_row(1, 0, "x"), _row(2, 3, "y", "prelim"), _row(3, 5, "z", embargo_minute=40)]
    step("a", first, 12)
    revised = [_row(1, 0, "x'"), _row(3, 5, "z", "other", embargo_minute=20), _row(4, 8, "w")]  # correct, drop 2, add 4
    step("a", revised, 45)

    status = _status_cli(spec_file)
    assert status["seq"] == 2
    assert {t["w_us"] for t in status["tiers"].values()} == {BASE_US + 45 * MINUTE}
    after = decide(spec, feed.status(), {})
    state = feed.status()
    # the sensor asks again only if some tier still has something due after the release
    assert isinstance(after, RunRequest) == any(t.due for t in state.tiers.values())
    assert isinstance(after, (RunRequest, SkipReason))
