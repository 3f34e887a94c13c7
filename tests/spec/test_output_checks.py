"""Spec mistakes refused when the spec loads (no Spark): the key and event_time against the
output's known columns, the transform's syntax, a bound built on a non-time column, impossible
dates, tier names of system tables. Each message is one exact line naming the key at fault."""

from __future__ import annotations

import pytest
import yaml

from tests.engine.feedkit import spec_dict
from waterline.errors import WaterlineError
from waterline.policy import PolicyError
from waterline.spec import SpecError, load_spec, spec_from_dict
from waterline.spec.columns import ddl_columns, output_columns

TICKS_SCHEMA = "symbol STRING, seq BIGINT, price DOUBLE, ts TIMESTAMP"
SELECT = "SELECT symbol, seq, price, ts AS event_time FROM source"
NAMES = "symbol, seq, price, event_time"


def ticks(tmp_path, **overrides) -> dict:
    data = {
        "feed": "ticks",
        "warehouse": str(tmp_path / "wh"),
        "source": {"format": "json", "path": str(tmp_path / "src" / "{partition}"), "options": {"schema": TICKS_SCHEMA}},
        "partitions": {"daily": {"start": "2026-01-05"}},
        "transform": SELECT,
        "key": ["symbol", "seq"],
        "event_time": "event_time",
        "tiers": {"realtime": "TRUE", "delayed_15m": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"},
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def refused(data: dict, error=WaterlineError) -> str:
    with pytest.raises(error) as info:
        spec_from_dict(data, spec_file="ticks.yaml")
    message = str(info.value)
    assert "\n" not in message
    return message


# -- key and event_time against the output's columns ---------------------------------------------

@pytest.mark.parametrize(("overrides", "expected"), [
    ({"key": ["symbol", "sequence"]},
     f"spec ticks.yaml: key[1]: column 'sequence' is not in the feed's output (the transform's select list names: {NAMES})"),
    ({"event_time": "ts"},
     f"spec ticks.yaml: event_time: column 'ts' is not in the feed's output (the transform's select list names: {NAMES})"),
    # no transform: the source's declared schema is the output
    ({"transform": None, "event_time": "event_time"},
     "spec ticks.yaml: event_time: column 'event_time' is not in the feed's output "
     "(the source's declared schema names: symbol, seq, price, ts)"),
    ({"transform": "SELECT symbol, seq, unix_micros(ts) AS event_time FROM source"},
     "spec ticks.yaml: event_time: column 'event_time' is BIGINT, not a TIMESTAMP (or text waterline parses): "
     "convert it in the transform, e.g. timestamp_millis(...) or CAST(... AS TIMESTAMP)"),
    # a column of the one view read keeps its declared type
    ({"transform": "SELECT symbol, seq, price AS event_time FROM source"},
     "spec ticks.yaml: event_time: column 'event_time' is DOUBLE, not a TIMESTAMP (or text waterline parses): "
     "convert it in the transform, e.g. timestamp_millis(...) or CAST(... AS TIMESTAMP)"),
])
def test_a_key_or_event_time_the_known_output_lacks_is_refused(tmp_path, overrides, expected):
    assert refused(ticks(tmp_path, **overrides), SpecError) == expected


@pytest.mark.parametrize("overrides", [
    {"transform": "SELECT * FROM source", "key": ["anything"]},   # SELECT *: unknowable without Spark
    {"transform": None, "job": "spark_jobs.ticks:process", "key": ["anything"]},  # a job builds the output
    {"source": {"format": "json", "path": "x/{partition}"}, "transform": None, "key": ["anything"]},  # inferred
    {"key": ["SYMBOL", "Seq"], "event_time": "EVENT_TIME"},  # Spark matches names case-insensitively
    {"transform": "SELECT symbol, seq, CAST(ts AS STRING) AS event_time FROM source"},  # text is parsed at ingest
    {"transform": "SELECT symbol, seq, ts AS event_time FROM source UNION ALL SELECT symbol, seq, ts FROM source"},
])
def test_columns_unknown_without_spark_or_matching_load(tmp_path, overrides):
    spec_from_dict(ticks(tmp_path, **overrides), spec_file="ticks.yaml")


def test_a_struct_column_as_key_is_checked_by_its_name(tmp_path):
    # keys are top-level columns (a struct-typed one included); a struct's field is no key column
    source = {"format": "json", "path": "x/{partition}",
              "options": {"schema": "k STRUCT<venue: STRING, id: BIGINT>, ts TIMESTAMP"}}
    data = ticks(tmp_path, source=source, transform="SELECT k, ts AS event_time FROM source", key=["k"])
    assert output_columns(spec_from_dict(data)).type_of("k") == "struct<venue: string, id: bigint>"
    assert refused({**data, "key": ["id"]}, SpecError) == (
        "spec ticks.yaml: key[0]: column 'id' is not in the feed's output (the transform's select list names: "
        "k, event_time)")


def test_output_columns_and_types_known_without_spark(tmp_path):
    spec = spec_from_dict(ticks(tmp_path, transform="SELECT symbol, seq + 1 AS seq, CAST(price AS DECIMAL(38, 2)) "
                                                    "AS price, ts AS event_time, s.x AS x FROM source"))
    known = output_columns(spec)
    assert known.names == ("symbol", "seq", "price", "event_time", "x")
    assert dict(known.types) == {"symbol": "string", "seq": "numeric", "price": "decimal(38, 2)",
                                 "event_time": "timestamp", "x": ""}
    assert output_columns(spec_from_dict(ticks(tmp_path, transform="SELECT * FROM source"))).names is None
    # a CTE may shadow the source's name: its columns' types are then not the schema's
    shadowed = "WITH source AS (SELECT symbol, seq, CAST(price AS STRING) AS price, ts FROM source) " + SELECT
    assert output_columns(spec_from_dict(ticks(tmp_path, transform=shadowed))).type_of("price") == ""


def test_ddl_columns_read_names_and_types_as_spark_spells_them():
    assert ddl_columns("a INT, `b c` LONG NOT NULL, d STRUCT<x: INT, y: ARRAY<STRING>> COMMENT 'n, o', "
                       "e VARCHAR(10), f TIMESTAMP_LTZ, g:DATE, h TIMESTAMP_NTZ") == {
        "a": "int", "b c": "bigint", "d": "struct<x: int, y: array<string>>", "e": "string",
        "f": "timestamp", "g": "date", "h": "timestamp_ntz"}


# -- the transform's syntax -----------------------------------------------------------------------

@pytest.mark.parametrize(("transform", "expected"), [
    ("SELECT symbol, seq FROM source WHERE (price > 1",
     'spec ticks.yaml: transform: syntax error at line 1, column 47 near "1": Expecting ); '
     'in transform "SELECT symbol, seq FROM source WHERE (price > 1"'),
    ("SELECT symbol, seq, ts AS event_time FROM source; SELECT 1",
     'spec ticks.yaml: transform: Spark runs one statement, this transform has 2 (the second: "SELECT 1")'),
    ("SELECT 'open FROM source",
     "spec ticks.yaml: transform: syntax error: Error tokenizing 'SELECT 'open FROM sourc' "
     "in transform \"SELECT 'open FROM source\""),
])
def test_a_transform_that_does_not_parse_is_refused_quoting_where(tmp_path, transform, expected):
    assert refused(ticks(tmp_path, transform=transform), SpecError) == expected


def test_spark_syntax_sqlglot_does_not_read_is_not_refused(tmp_path):
    # Spark 4's VARIANT path: sqlglot's Spark dialect cannot parse it, Spark runs it; the
    # transform loads, its columns unknown until Spark reads them
    transform = "SELECT symbol, seq, parse_json(note):ts::timestamp AS event_time FROM source"
    spec = spec_from_dict(ticks(tmp_path, transform=transform, key=["anything"]))
    assert output_columns(spec).source == ("the transform uses Spark syntax sqlglot does not read "
                                           "(a VARIANT path, `column:field`)")
    # a colon inside text is no VARIANT path: the missing parenthesis is still refused
    assert refused(ticks(tmp_path, transform="SELECT 'a:b' AS x, symbol FROM source WHERE (seq > 1"),
                   SpecError).startswith("spec ticks.yaml: transform: syntax error at line 1")


def test_a_partition_placeholder_parses(tmp_path):
    spec_from_dict(ticks(tmp_path, transform=SELECT + " WHERE to_date(ts) = '{partition}'"))


# -- a bound compared with WATERLINE() on a column that is no time ------------------------------

@pytest.mark.parametrize(("policy", "expected"), [
    ("symbol + INTERVAL 15 MINUTES <= WATERLINE()",
     "spec ticks.yaml: tiers.late: WATERLINE() is compared with \"symbol + INTERVAL '15' MINUTES\", which adds an "
     "interval to column symbol (STRING), not to a date or TIMESTAMP: build the bound on a time column (convert it "
     "in the transform, e.g. CAST(symbol AS TIMESTAMP))"),
    ("WATERLINE() < price",
     'spec ticks.yaml: tiers.late: WATERLINE() is compared with "price", which is DOUBLE, not TIMESTAMP: convert '
     "it, e.g. timestamp_millis(price), timestamp_seconds(price) or timestamp_micros(price)"),
    ("nope <= WATERLINE()",
     f'spec ticks.yaml: tiers.late: unknown column "nope" (the feed\'s columns: event_time, price, seq, symbol)'),
])
def test_a_bound_on_a_column_known_not_to_be_a_time_is_refused_naming_tier_and_column(tmp_path, policy, expected):
    assert refused(ticks(tmp_path, tiers={"realtime": "TRUE", "late": policy}), PolicyError) == expected


def test_bounds_on_unknown_or_time_columns_load(tmp_path):
    tiers = {"a": "event_time + INTERVAL 15 MINUTES <= WATERLINE()", "b": "symbol + INTERVAL 1 DAY <= WATERLINE()"}
    spec_from_dict(ticks(tmp_path, transform="SELECT * FROM source", tiers=tiers))  # types unknown: Spark's call
    # event_time given as text is parsed at ingest: a bound on it is a timestamp bound
    spec_from_dict(ticks(tmp_path, transform="SELECT symbol, seq, CAST(ts AS STRING) AS event_time FROM source",
                         tiers={"a": tiers["a"]}))


# -- impossible dates -----------------------------------------------------------------------------

@pytest.mark.parametrize(("partitions", "expected"), [
    ("daily: {start: 2026-02-30}", "partitions.daily.start: '2026-02-30' is not a real date or hour"),
    ("daily: {start: 2026-01-05, end: 2026-13-01}", "partitions.daily.end: '2026-13-01' is not a real date or hour"),
    ("hourly: {start: 2026-01-05 25:00:00}", "partitions.hourly.start: expected an hour YYYY-MM-DD-HH:00, "
                                            "got '2026-01-05 25:00:00'"),
])
def test_an_impossible_date_in_the_yaml_is_one_line_naming_the_key(tmp_path, partitions, expected):
    text = yaml.safe_dump(ticks(tmp_path, partitions=None), sort_keys=False) + f"partitions: {{{partitions}}}\n"
    path = tmp_path / "ticks.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert str(info.value) == f"spec {path}: {expected}"


def test_a_real_date_in_a_static_list_is_its_text(tmp_path):
    path = tmp_path / "ticks.yaml"
    path.write_text(yaml.safe_dump(ticks(tmp_path, partitions=None), sort_keys=False)
                    + "partitions: {static: [2026-01-05, 2026-02-30]}\n")
    assert load_spec(path).partitions.values == ("2026-01-05", "2026-02-30")


def test_an_impossible_time_literal_in_a_policy_is_refused(tmp_path):
    data = ticks(tmp_path, tiers={"emb": "TIMESTAMP '2026-02-30 13:30:00' <= WATERLINE()"})
    assert refused(data, PolicyError) == ("spec ticks.yaml: tiers.emb: impossible date or time "
                                          "\"2026-02-30 13:30:00\" in the policy: day is out of range for month")


# -- tier names of system tables ------------------------------------------------------------------

@pytest.mark.parametrize(("tier", "reason"), [
    ("held", "'held' names the feed's held table (and its Dagster and Airflow asset); rename the tier"),
    ("quarantine", "'quarantine' names the feed's quarantine table; rename the tier"),
    ("audit_report", "'audit_report' names the feed's audit report asset in Dagster; rename the tier"),
    ("_wl_proofs", "names starting with _wl are reserved for waterline's own tables (<feed>/_wl_proofs, "
                   "_wl_stream, _wl_lease) and columns; rename the tier"),
])
def test_a_tier_named_like_a_system_table_is_refused(tmp_path, tier, reason):
    assert refused(ticks(tmp_path, tiers={"realtime": "TRUE", tier: "TRUE"}), SpecError) == (
        f"spec ticks.yaml: tiers.{tier}: {reason}")


def test_every_adapter_refuses_with_the_same_line(tmp_path):
    """`waterline.load` (the CLI's way in), the factories' `load_feed_specs` and the Dagster
    definitions all load through the spec loader, so the line is the same everywhere."""
    import waterline
    from waterline.dagster import definitions_from_specs
    from waterline.spec.loader import load_feed_specs

    path = tmp_path / "ticks.yaml"
    path.write_text(yaml.safe_dump(ticks(tmp_path, tiers={"held": "TRUE"}), sort_keys=False))
    expected = f"spec {path}: tiers.held: 'held' names the feed's held table (and its Dagster and Airflow asset); rename the tier"
    for load in (load_spec, waterline.load, load_feed_specs, definitions_from_specs):
        with pytest.raises(SpecError) as info:
            load(path)
        assert str(info.value) == expected, load
