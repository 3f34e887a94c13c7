"""A busy feed lease is a transient failure to Dagster: the step is retried in place, then
fails as retryable (no ``Failure(allow_retries=False)``), and succeeds once the lease is free.
Real Spark, Delta and Dagster (in-process execution against a temporary instance)."""

from __future__ import annotations

import pytest
from dagster import AssetKey, DagsterInstance, materialize

from tests.dagster.feeds import rows, spec as make_feed, write_partition
from waterline.dagster import definitions_from_specs
from waterline.dagster.resources import WaterlineResource
from waterline.engine.tables.lease import WAIT_ENV, feed_lease

pytestmark = pytest.mark.spark

HELD = AssetKey(["f", "held"])


def _events(result, kind: str) -> list:
    return [e for e in result.all_events if e.event_type_value == kind]


def _chain(error) -> list:
    """A serialised error and its causes."""
    out = []
    while error is not None:
        out.append(error)
        error = error.cause
    return out


def test_a_busy_lease_retries_the_step_then_fails_as_retryable(spark, tmp_path, monkeypatch):
    feed = make_feed(tmp_path)
    write_partition(tmp_path, "a", rows("a"))
    defs = definitions_from_specs([feed])
    held = defs.get_assets_def(HELD)
    resource = WaterlineResource(transient_retries=2, retry_wait_seconds=0)
    (tmp_path / "home").mkdir()
    instance = DagsterInstance.local_temp(tempdir=str(tmp_path / "home"))
    monkeypatch.setenv(WAIT_ENV, "0.5")

    with feed_lease(feed.feed_dir, feed=feed.feed, timeout_s=5):  # another process's ingest, say
        busy = materialize([held], instance=instance, partition_key="a", resources={"waterline": resource},
                           raise_on_error=False)
    assert not busy.success
    assert len(_events(busy, "STEP_UP_FOR_RETRY")) == 2
    (failure,) = _events(busy, "STEP_FAILURE")
    data = failure.step_failure_data
    assert data.user_failure_data is None  # not a non-retryable Failure: run retries may take it
    assert any("busy" in (c.message or "") and "lease" in (c.message or "") for c in _chain(data.error)), data.error

    done = materialize([held], instance=instance, partition_key="a", resources={"waterline": resource})
    assert done.success and not _events(done, "STEP_UP_FOR_RETRY")
