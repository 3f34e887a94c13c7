"""A real SIGKILL at each step of `waterline apply` on a live feed (a tier added, a delay
shortened), then a re-run of the apply: the feed ends as an uninterrupted run does, and no
operation publishes from the half-applied state meanwhile (issue 56)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.apply_crash_driver import AFTER, BEFORE, after_apply, apply, before_apply, feed
from tests.engine.feedkit import read_tier
from waterline.clock import parse_instant
from waterline.engine.core import faults
from waterline.errors import WaterlineError

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


def _tables(spark, root: Path) -> dict:
    spec = feed(spark, root, AFTER).spec
    return {t: {k: (r["v"], r["_wl_seq"]) for k, r in read_tier(spark, spec, t).items()} for t in AFTER}


@pytest.fixture(scope="module")
def reference(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("reference")
    before_apply(spark, root)
    apply(spark, root)
    after_apply(spark, root)
    return _tables(spark, root)


CASES = [faults.APPLY_AFTER_RESCHEDULE, faults.APPLY_BEFORE_RECORD, faults.CREATE_TIER_AFTER]


@pytest.mark.parametrize("point", CASES)
def test_kill_mid_apply_then_rerun_converges(spark, tmp_path, reference, point):
    before_apply(spark, tmp_path)
    shown = read_tier(spark, feed(spark, tmp_path, BEFORE).spec, "d15")
    proc = subprocess.Popen([sys.executable, "-m", "tests.engine.apply_crash_driver", str(tmp_path), point],
                            cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert proc.wait(timeout=600) == -signal.SIGKILL, f"the apply was not killed at {point}"

    for tiers in (BEFORE, AFTER):  # neither spec file publishes from a half-applied change
        with pytest.raises(WaterlineError, match="waterline apply"):
            feed(spark, tmp_path, tiers).release(as_of=parse_instant("2026-01-01T10:40:00Z"))
    assert read_tier(spark, feed(spark, tmp_path, BEFORE).spec, "d15") == shown

    apply(spark, tmp_path)  # the operator runs the apply again
    after_apply(spark, tmp_path)
    assert _tables(spark, tmp_path) == reference
