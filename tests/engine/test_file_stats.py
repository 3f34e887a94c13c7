"""File statistics (`engine.delta.file_stats`) hold every value of their file, and no reader
skips a file holding a matching row. No JVM.

Files are written as the driver's release path writes them (`arrow_files.write_partitioned`)
and described as its commit describes them (`parquet_files.written_files`), from rows drawn
over each type's whole domain; Spark's own writer's files are covered by
tests/interop/test_readers.py.
"""

from __future__ import annotations

import json
import math
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from waterline.engine.delta import file_stats
from waterline.engine.delta.arrow_files import write_partitioned
from waterline.engine.delta.parquet_files import written_files

UTC = timezone.utc
EPOCH = datetime(1970, 1, 1)
FIRST_US = (datetime(1, 1, 1) - EPOCH) // timedelta(microseconds=1)
LAST_US = (datetime(9999, 12, 31, 23, 59, 59, 999999) - EPOCH) // timedelta(microseconds=1)

SCHEMA = pa.schema([
    ("p", pa.string()), ("big", pa.int64()), ("flag", pa.bool_()), ("d", pa.float64()), ("f", pa.float32()),
    ("dec", pa.decimal128(38, 4)), ("ts", pa.timestamp("us", "UTC")), ("ntz", pa.timestamp("us")),
    ("day", pa.date32()), ("s", pa.string()), ("bin", pa.binary()),
])
_TEXT = st.text(st.characters(codec="utf-8"), max_size=40) | st.sampled_from(
    ["", "\x00", "\U0010ffff" * 33, "a" * 32 + "\U0010ffff" + "b", "\U0001f600" * 40, "x" * 5000])
_MICROS = st.integers(FIRST_US, LAST_US) | st.sampled_from([FIRST_US, LAST_US, LAST_US - 999, -1, 0])
_DEC_DIGITS = 10**34 - 1  # DECIMAL(38, 4): 34 digits before the point


def _value(name: str):
    return {
        "big": st.integers(-2**63, 2**63 - 1),
        "flag": st.booleans(),
        "d": st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([-0.0, 5e-324, math.nan]),
        "f": st.floats(width=32, allow_nan=True, allow_infinity=True),
        "dec": st.integers(-(10**38 - 1), 10**38 - 1).map(lambda u: Decimal(f"{u}E-4")),
        "ts": _MICROS.map(lambda us: (EPOCH + timedelta(microseconds=us)).replace(tzinfo=UTC)),
        "ntz": _MICROS.map(lambda us: EPOCH + timedelta(microseconds=us)),
        "day": st.integers(date(1, 1, 1).toordinal(), date(9999, 12, 31).toordinal()).map(date.fromordinal),
        "s": _TEXT,
        "bin": st.binary(max_size=8),
    }[name]


ROW = st.fixed_dictionaries({"p": st.sampled_from(["a", "b"]),
                             **{f.name: st.none() | _value(f.name) for f in SCHEMA if f.name != "p"}})


def _within(value, low, high, kind: pa.DataType) -> bool:
    """``value`` between Delta's written bounds, compared as readers compare them."""
    if pa.types.is_floating(kind):
        parse = {"Infinity": math.inf, "-Infinity": -math.inf}
        low, high = float(parse.get(low, low)), float(parse.get(high, high))  # as a reader parses them
        return not math.isnan(value) and low <= value <= high
    if pa.types.is_decimal(kind):
        return low <= value <= high
    if pa.types.is_timestamp(kind):
        moment = value.replace(tzinfo=None) if value.tzinfo is None else value.astimezone(UTC).replace(tzinfo=None)
        text = moment.isoformat(timespec="microseconds")
        return low.rstrip("Z") <= text and text[:23] <= high.rstrip("Z")  # bounds are ms; the year has 4 digits
    if pa.types.is_date(kind):
        return low <= value.isoformat() <= high
    if pa.types.is_string(kind):
        return low <= value <= high
    return low <= value <= high


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(ROW, min_size=1, max_size=8))
def test_statistics_bound_every_value_and_count_every_null(tmp_path_factory, rows):
    root = tmp_path_factory.mktemp("stats")
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    write_partitioned(table, str(root / "data"), partition_by="p")
    files = written_files(str(root), "data", stats=True)
    assert len(files) == len({r["p"] for r in rows})
    for f in files:
        stats = json.loads(f.stats, parse_float=Decimal)  # a decimal bound has all its digits
        mine = [r for r in rows if r["p"] == f.partition_values["p"]]
        assert stats["numRecords"] == len(mine)
        for field in SCHEMA:
            if field.name == "p":
                continue
            values = [r[field.name] for r in mine]
            if field.name in stats["nullCount"]:
                assert stats["nullCount"][field.name] == sum(v is None for v in values), field.name
            if "minValues" not in stats:
                # only a value no bound can be written for leaves the file unbounded
                assert any(_unboundable(v) for r in mine for v in r.values() if v is not None), stats
                continue
            present = [v for v in values if v is not None]
            if field.name == "bin" or not present:
                assert field.name not in stats["minValues"]
                continue
            low, high = stats["minValues"][field.name], stats["maxValues"][field.name]
            assert all(_within(v, low, high, field.type) for v in present), (field.name, low, high, present)


def _unboundable(value) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, datetime):
        return value.replace(tzinfo=None) > datetime(9999, 12, 31, 23, 59, 59, 999000)
    if isinstance(value, str):
        return len(value.encode()) > 4096
    return False


@pytest.mark.parametrize(("ms", "utc", "text"), [
    ((datetime(1, 1, 1) - EPOCH) // timedelta(milliseconds=1), True, "0001-01-01T00:00:00.000Z"),
    ((datetime(9999, 12, 31, 23, 59, 59, 999000) - EPOCH) // timedelta(milliseconds=1), False,
     "9999-12-31T23:59:59.999"),
    (-1, True, "1969-12-31T23:59:59.999Z"),
])
def test_timestamps_are_written_with_four_digit_years(ms, utc, text):
    assert file_stats.timestamp_text(ms, utc) == text


def test_a_timestamp_past_the_last_writable_millisecond_leaves_the_file_unbounded(tmp_path):
    """9999-12-31 23:59:59.999999 ceils to year 10000, which has no text: no bounds (never a
    narrower one), where the old code raised OverflowError."""
    rows = pa.table({"ts": pa.array([datetime(9999, 12, 31, 23, 59, 59, 999999)], pa.timestamp("us")),
                     "n": pa.array([1], pa.int64())})
    pq.write_table(rows, tmp_path / "f.parquet")
    stats = json.loads(file_stats.delta_stats(pq.read_metadata(tmp_path / "f.parquet")))
    assert "minValues" not in stats and stats["nullCount"] == {"ts": 0, "n": 0}


def test_long_strings_are_cut_as_spark_cuts_them():
    cut = file_stats.truncated_max
    assert cut("a" * 32) == "a" * 32
    assert cut("a" * 33) == "a" * 32 + "\x7f"
    assert cut("a" * 32 + "\u00e9") == "a" * 32 + "\U0010ffff"
    assert cut("a" * 32 + "\U0010ffff" * 2 + "b") == "a" * 32 + "\U0010ffff" * 2 + "\x7f"
    assert cut("a" * 32 + "\U0010ffff" * 3) == "a" * 32 + "\U0010ffff" * 3  # nothing is above: whole
    for value in ("z" * 40, "a" * 32 + "\x7e", "\U0001f600" * 40, "a" * 32 + "\U0010fffe"):
        assert value <= cut(value) and value.encode() <= cut(value).encode()  # code point and byte order


def test_a_float_column_arrow_wrote_without_saying_it_holds_no_nan_is_unbounded(tmp_path):
    """Arrow leaves NaN out of the footer's bounds; only the writer's note (`annotate`) says
    there is none, else the file gets no bounds (Spark orders NaN above every number)."""
    rows = pa.table({"d": [1.0, math.nan], "n": [1, 2]})
    pq.write_table(rows, tmp_path / "plain.parquet")
    assert "minValues" not in json.loads(file_stats.delta_stats(pq.read_metadata(tmp_path / "plain.parquet")))
    pq.write_table(file_stats.annotate(rows), tmp_path / "noted.parquet")
    assert "minValues" not in json.loads(file_stats.delta_stats(pq.read_metadata(tmp_path / "noted.parquet")))
    clean = pa.table({"d": [1.0, -0.0, math.inf], "n": [1, 2, 3]})
    pq.write_table(file_stats.annotate(clean), tmp_path / "clean.parquet")
    stats = json.loads(file_stats.delta_stats(pq.read_metadata(tmp_path / "clean.parquet")))
    assert (stats["minValues"]["d"], stats["maxValues"]["d"]) == (-0.0, "Infinity")
