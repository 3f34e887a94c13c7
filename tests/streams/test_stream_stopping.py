"""SIGTERM and Ctrl-C stop `waterline stream` within the grace whatever its batch is doing,
and the feed lease is free at once afterwards (`waterline.engine.tables.stopping`).

The batch is made to hang before its held commit, under the lease, in Spark's batch thread
(``WATERLINE_HANG_AT``): the stop the stream asks for (after the current batch) never comes,
so the grace's watchdog gives the lease back and ends the process, as it must for the
endless history search of issue 53. Real CLI process, real broker, real Spark."""

from __future__ import annotations

import signal

import pytest

from tests.engine.stopkit import assert_stopped_and_lease_free, start_hung, wait_for_hang
from tests.streams.kafkakit import new_topic, produce, quote_value, stream_spec
from waterline import load
from waterline.engine.core import faults


@pytest.mark.parametrize("signum,once", [(signal.SIGTERM, False), (signal.SIGINT, True)],
                         ids=["sigterm-running", "ctrl-c-once"])
def test_a_signal_stops_a_stream_hung_in_its_batch_and_frees_the_lease(kafka, tmp_path, signum, once):
    topic = new_topic(kafka.bootstrap)
    produce(kafka.bootstrap, topic, [(0, "a", quote_value(1.0, 0)), (0, "b", quote_value(2.0, 1))])
    spec = stream_spec(tmp_path, kafka.bootstrap, topic, tiers={"realtime": "TRUE"})
    args = ["stream", str(spec), *(["--once"] if once else ["--trigger-seconds", "0.5"])]
    proc = start_hung(args, faults.INGEST_BEFORE_COMMIT)
    wait_for_hang(proc, faults.INGEST_BEFORE_COMMIT)
    feed = load(spec)
    assert_stopped_and_lease_free(proc, signum, feed.spec.feed_dir, feed.name)
