"""The driver-read limit a stream batch runs with is the one of the process that started the
stream (`BatchSink.driver_rows`), also where the batch runs elsewhere (a Connect server's
Python worker, whose environment is the server's)."""

from __future__ import annotations

import pickle

from tests.engine.feedkit import local_reads
from waterline.clock import SystemClock
from waterline.engine.spark.local_frames import batch_fits, limited_to, local_rows


def test_a_limit_set_for_a_block_wins_over_the_environment_and_ends_with_it():
    with local_reads("5"):
        assert local_rows() == 5
        with limited_to(0):
            assert local_rows() == 0 and not batch_fits(1)
        assert local_rows() == 5 and batch_fits(5)


def test_a_batch_sink_carries_its_makers_limit_through_pickling(tmp_path):
    from tests.engine.feedkit import make_spec
    from waterline.engine.stream_run import BatchSink

    with local_reads("0"):
        sink = BatchSink(make_spec(tmp_path, {"realtime": "TRUE"}), "ticks", SystemClock())
    with local_reads("7"):
        assert pickle.loads(pickle.dumps(sink)).driver_rows == 0
