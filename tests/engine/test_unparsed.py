"""Source records no reader can parse land in quarantine with their raw text and a parse reason.

Per text format (json with a declared schema, json with an inferred one, csv): good
rows are ingested, every malformed record is in the quarantine table with its raw
text and a reason naming the format and source, the ingest result counts them, and
nothing is dropped without a trace (held + quarantine = every record written).
"""

from __future__ import annotations

import pytest

from tests.engine.feedkit import far_future_clock, make_spec
from waterline import Feed

pytestmark = pytest.mark.spark

GOOD = [
    '{"id": 1, "event_time": "2026-01-01 10:00:00", "status": "final", "embargo_until": null, "v": "x"}',
    '{"id": 2, "event_time": "2026-01-01 10:05:00", "status": "final", "embargo_until": null, "v": "y"}',
]
BAD_JSON = ['{"id": 3, "event_time": "2026-01-01 10:1', "this is not json at all"]
CSV_HEADER = "id,event_time,status,embargo_until,v"
GOOD_CSV = ["1,2026-01-01 10:00:00,final,,x", "2,2026-01-01 10:05:00,final,,y"]
BAD_CSV = ["3,2026-01-01 10:10:00,final", "oops,2026-01-01 10:15:00,final,,z,extra"]


def _write(root, name: str, lines: list[str]) -> None:
    folder = root / "src" / "a"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("\n".join(lines) + "\n")


def _quarantine(spec) -> list[dict]:
    from waterline.engine.delta.storage import delta_table

    return delta_table(spec.quarantine_path).to_pyarrow_table().to_pylist()


def _held_ids(spec) -> list[int]:
    from waterline.engine.delta.storage import delta_table

    return sorted(r["id"] for r in delta_table(spec.held_path).to_pyarrow_table().to_pylist())


@pytest.mark.parametrize("declared", [True, False], ids=["json-declared-schema", "json-inferred-schema"])
def test_malformed_json_lines_are_quarantined_raw(spark, tmp_path, declared):
    spec = make_spec(tmp_path, {"rt": "TRUE"}, **({} if declared else {
        "source": {"format": "json", "path": str(tmp_path / "src" / "{partition}")}}))
    _write(tmp_path, "part-0.json", GOOD + BAD_JSON)
    feed = Feed(spec, spark=spark, clock=far_future_clock())
    result = feed.ingest("a")
    assert (result.rows_read, result.inserted, result.quarantined) == (2, 2, 2)
    assert _held_ids(spec) == [1, 2]
    bad = _quarantine(spec)
    assert sorted(r["_wl_row"] for r in bad) == sorted(BAD_JSON)
    assert all(r["_wl_reason"].startswith("could not be parsed as json (source source)") for r in bad)

    # A re-run whose only change is in the malformed records is not "the same output".
    _write(tmp_path, "part-0.json", GOOD + BAD_JSON[:1])
    again = feed.ingest("a")
    assert (again.versions_written, again.quarantined) == (0, 1)
    assert [r["_wl_row"] for r in _quarantine(spec)] == BAD_JSON[:1]


def test_malformed_csv_lines_are_quarantined_raw(spark, tmp_path):
    source = {"format": "csv", "path": str(tmp_path / "src" / "{partition}"),
              "options": {"schema": "id BIGINT, event_time STRING, status STRING, embargo_until STRING, v STRING"}}
    spec = make_spec(tmp_path, {"rt": "TRUE"}, source=source)
    _write(tmp_path, "part-0.csv", [CSV_HEADER, *GOOD_CSV, *BAD_CSV])
    result = Feed(spec, spark=spark, clock=far_future_clock()).ingest("a")
    assert (result.inserted, result.quarantined) == (2, 2)
    assert _held_ids(spec) == [1, 2]
    bad = _quarantine(spec)
    assert sorted(r["_wl_row"] for r in bad) == sorted(BAD_CSV)
    assert all(r["_wl_reason"].startswith("could not be parsed as csv (source source)") for r in bad)


def test_csv_without_a_schema_still_keeps_short_and_long_lines(spark, tmp_path):
    spec = make_spec(tmp_path, {"rt": "TRUE"}, source={"format": "csv", "path": str(tmp_path / "src" / "{partition}")},
                     transform="SELECT CAST(id AS BIGINT) AS id, event_time, status, "
                               "CAST(embargo_until AS TIMESTAMP) AS embargo_until, v FROM source")
    _write(tmp_path, "part-0.csv", [CSV_HEADER, *GOOD_CSV, "3,2026-01-01 10:10:00,final", "4,a,b,c,d,e"])
    result = Feed(spec, spark=spark, clock=far_future_clock()).ingest("a")
    assert (result.inserted, result.quarantined) == (2, 2)
    assert sorted(r["_wl_row"] for r in _quarantine(spec)) == sorted(["3,2026-01-01 10:10:00,final", "4,a,b,c,d,e"])
