"""`waterline.engine.ingest.stream.offsets`: a micro-batch's record bound from Spark's checkpoint
files, written here as Spark 4.2 writes them (tests/streams/test_stream_ingest.py reads a
real query's checkpoint)."""

from __future__ import annotations

import json
from pathlib import Path

from waterline.engine.ingest.stream.offsets import batch_bound, records_between

META = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1796157812083, "conf": {"spark.sql.shuffle.partitions": "4"}})


def _offsets(point: Path, batch: int, *sources: dict | str) -> None:
    (point / "offsets").mkdir(parents=True, exist_ok=True)
    lines = ["v1", META, *[s if isinstance(s, str) else json.dumps(s) for s in sources]]
    (point / "offsets" / str(batch)).write_text("\n".join(lines))


def _initial(point: Path, offsets: dict, version: str = "v1") -> None:
    (point / "sources" / "0").mkdir(parents=True, exist_ok=True)
    (point / "sources" / "0" / "0").write_bytes(b"\0" + f"{version}\n".encode() + json.dumps(offsets).encode())


def test_each_batch_is_bounded_by_its_offsets_less_the_last_batchs(tmp_path):
    _initial(tmp_path, {"t": {"0": 5, "1": 0}})
    _offsets(tmp_path, 0, {"t": {"0": 12, "1": 3}})
    _offsets(tmp_path, 1, {"t": {"0": 12, "1": 40}, "u": {"0": 2}})  # a topic matched since: from 0
    assert batch_bound(str(tmp_path), 0) == 7 + 3
    assert batch_bound(str(tmp_path), 1) == 37 + 2
    assert batch_bound(str(tmp_path), 2) is None  # not planned yet


def test_what_the_checkpoint_does_not_tell_is_none_never_a_failure(tmp_path):
    assert batch_bound(str(tmp_path / "absent"), 0) is None
    _initial(tmp_path, {"t": {"0": 0}}, version="v9")
    _offsets(tmp_path, 0, {"t": {"0": 4}})
    assert batch_bound(str(tmp_path), 0) is None  # a layout this module does not know
    _offsets(tmp_path, 1, {"t": {"0": 9}}, {"s": {"0": 1}})  # two sources in one query
    assert batch_bound(str(tmp_path), 1) is None
    _offsets(tmp_path, 2, "-")  # no offsets for the source
    assert batch_bound(str(tmp_path), 2) is None
    _offsets(tmp_path, 3, "{not json")
    assert batch_bound(str(tmp_path), 4) is None and batch_bound(str(tmp_path), 3) is None


def test_offsets_that_are_no_position_give_no_bound():
    assert records_between({"t": {"0": -2}}, {"t": {"0": 5}}) is None  # Spark's "earliest"
    assert records_between({"t": {"0": 9}}, {"t": {"0": 5}}) == 0  # never negative
