"""Every validation error: one line, `spec <file>: <key.path>: <reason>`."""

from __future__ import annotations

import pytest
import yaml

from waterline.spec import SpecError, load_spec, spec_from_dict


def _set(path: str, value):
    def mutate(data):
        *parents, last = path.split(".")
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        if value is _DELETE:
            node.pop(last, None)
        else:
            node[last] = value
    return mutate


_DELETE = object()

CASES = [
    # (mutation, key path, start of the reason)
    (_set("feeds", "x"), "feeds", "unknown key; did you mean 'feed'?"),
    (_set("tier", {}), "tier", "unknown key; did you mean 'tiers'?"),
    (_set("zzz", 1), "zzz", "unknown key (valid keys: feed, description,"),
    (_set("key", _DELETE), "key", "required key is missing"),
    (_set("feed", "Ticks"), "feed", "feed names must match [a-z][a-z0-9_]*"),
    (_set("feed", "f" * 41), "feed", "feed names are at most 40 characters, got 41"),
    (_set("feed", 7), "feed", "expected a non-empty string, got int 7"),
    (_set("description", ["x"]), "description", "expected a string, got a list"),
    (_set("warehouse", ""), "warehouse", "expected a non-empty string"),
    (_set("warehouse", "gs://bucket/wh"), "warehouse", "expected a local folder or an s3a://bucket/prefix URI"),
    (_set("warehouse", "s3a:///wh"), "warehouse", "expected s3a://bucket/prefix, got 's3a:///wh' (no bucket)"),
    (_set("sources", {"a": {"format": "json", "path": "x/{partition}"}}), "source", "give exactly one of `source`"),
    (_set("source", _DELETE), "source", "give exactly one of `source`"),
    (_set("source", "data/x"), "source", "expected a mapping {format: ..., path: ...}, got str 'data/x'"),
    (_set("source.fmt", "json"), "source.fmt", "unknown key; did you mean 'format'?"),
    (_set("source.format", _DELETE), "source.format", "required key is missing"),
    (_set("source.format", "avro"), "source.format", "expected one of json, csv, parquet, delta, kafka, got 'avro'"),
    (_set("source.path", "data/x/"), "source.path", "a file source needs a {partition} placeholder"),
    (_set("source.path", "data/{day}/"), "source.path", "unknown placeholder {day} for daily partitions"),
    (_set("source.path", "data/{partition/"), "source.path", "bad placeholder in"),
    (_set("source.options", {"schema": ["a"]}), "source.options.schema", "expected a string, number or boolean"),
    (_set("source.options", ["header"]), "source.options", "expected a mapping, got a list"),
    (_set("partitions", {"weekly": {"start": "2026-01-01"}}), "partitions.weekly", "unknown key (valid keys: daily, hourly, static)"),
    (_set("partitions", {"daily": {"start": "2026-01-01"}, "static": ["a"]}), "partitions", "expected exactly one of daily, hourly, static, got 2"),
    (_set("partitions", {}), "partitions", "expected exactly one of"),
    (_set("partitions", "daily"), "partitions", "expected one of {daily: {start: ...}}"),
    (_set("partitions", {"daily": {}}), "partitions.daily.start", "required key is missing"),
    (_set("partitions", {"daily": {"start": "01/02/2026"}}), "partitions.daily.start", "expected a date YYYY-MM-DD, got '01/02/2026'"),
    (_set("partitions", {"daily": {"start": "2026-02-30"}}), "partitions.daily.start", "'2026-02-30' is not a real date or hour"),
    (_set("partitions", {"daily": {"start": "2026-01-05", "end": "2026-01-01"}}), "partitions.daily.end", "2026-01-01 is before start 2026-01-05"),
    (_set("partitions", {"daily": {"start": "2026-01-05", "ending": "2026-01-06"}}), "partitions.daily.ending", "unknown key; did you mean 'end'?"),
    (_set("partitions", {"hourly": {"start": "2026-01-05-10:30"}}), "partitions.hourly.start", "expected an hour YYYY-MM-DD-HH:00"),
    (_set("partitions", {"hourly": {"start": "2026-01-05"}}), "source.path", "hourly keys contain ':'"),
    (_set("partitions", {"static": []}), "partitions.static", "expected a non-empty list of partition values"),
    (_set("partitions", {"static": ["a", "a"]}), "partitions.static[1]", "duplicate value 'a'"),
    (_set("partitions", {"static": ["a/b"]}), "partitions.static[0]", "static partition values must match"),
    (_set("partitions", {"static": [None]}), "partitions.static[0]", "expected a string, got nothing"),
    (_set("transform", "  "), "transform", "expected a non-empty string"),
    (_set("job", "spark_jobs.ticks.process"), "job", "expected 'module.path:function', got 'spark_jobs.ticks.process'"),
    (_set("key", []), "key", "expected a non-empty list of column names, got a list"),
    (_set("key", {"a": 1}), "key", "expected a non-empty list of column names, got a mapping"),
    (_set("key", ["symbol", "symbol"]), "key", "duplicate column 'symbol'"),
    (_set("key", ["symbol", "trade id"]), "key[1]", "column names must match [A-Za-z_][A-Za-z0-9_]*"),
    (_set("key", ["_wl_seq"]), "key[0]", "column names starting with _wl_ are reserved"),
    (_set("event_time", None), "event_time", "expected a non-empty string, got nothing"),
    (_set("timezone", "Mars/Olympus"), "timezone", "unknown IANA time zone 'Mars/Olympus'"),
    (_set("waterline", {"mode": "wallclock"}), "waterline.mode", "expected one of clock, event, got 'wallclock'"),
    (_set("waterline", {"mode": "event", "latness": "1 s"}), "waterline.latness", "unknown key; did you mean 'lateness'?"),
    (_set("waterline", {"mode": "clock", "lateness": "1 second"}), "waterline.lateness", "only applies to mode event"),
    (_set("waterline", {"mode": "event", "lateness": "soon"}), "waterline.lateness", "duration 'soon'"),
    (_set("waterline", {"mode": "event", "lateness": ["30 s"]}), "waterline.lateness", "duration"),
    (_set("waterline", {"mode": "event", "lateness": "-5 minutes"}), "waterline.lateness", "'-5 minutes'"),
    (_set("waterline", {"mode": "event", "idle_after": "3 fortnights"}), "waterline.idle_after", "unknown unit 'fortnights'"),
    (_set("waterline", {"mode": "event", "idle_after": "0 s"}), "waterline.idle_after", "must be longer than 0 seconds"),
    (_set("tiers", {}), "tiers", "expected at least one tier"),
    (_set("tiers", ["TRUE"]), "tiers", "expected a mapping of tier name -> policy, got a list"),
    (_set("tiers", {"delayed-15m": "TRUE"}), "tiers.delayed-15m", "tier names must match [a-z][a-z0-9_]* (used in table paths and column names)"),
    (_set("tiers", {"t" * 41: "TRUE"}), "tiers." + "t" * 41, "tier names are at most 40 characters"),
    (_set("tiers", {"realtime": ""}), "tiers.realtime", "expected a policy (a SQL boolean expression string), got str ''"),
    (_set("tiers", {"realtime": 1}), "tiers.realtime", "expected a policy"),
    (_set("late", "ignore"), "late", "expected one of publish, drop, quarantine, got 'ignore'"),
    (_set("late", "drop"), "late", "late: drop needs waterline mode event"),
    (_set("release_interval_seconds", 0), "release_interval_seconds", "expected an integer >= 1, got 0"),
    (_set("release_interval_seconds", "30"), "release_interval_seconds", "expected an integer >= 1, got '30'"),
    (_set("release_interval_seconds", True), "release_interval_seconds", "expected an integer >= 1, got True"),
]


@pytest.mark.parametrize("mutate, key_path, reason", CASES, ids=[f"{c[1]}:{c[2][:30]}" for c in CASES])
def test_error_names_file_and_key(tmp_path, minimal, mutate, key_path, reason):
    mutate(minimal)
    path = tmp_path / "ticks.yaml"
    path.write_text(yaml.safe_dump(minimal, sort_keys=False))
    with pytest.raises(SpecError) as err:
        load_spec(path, base_dir=tmp_path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"spec {path}: {key_path}: "), message
    assert reason in message, message


def test_source_is_reserved_among_several_sources(minimal):
    del minimal["source"]
    minimal["sources"] = {"source": {"format": "json", "path": "a/{partition}"}, "nasdaq": {"format": "json", "path": "b/{partition}"}}
    with pytest.raises(SpecError, match=r"^spec ticks: sources.source: the view `source` is the union of all sources"):
        spec_from_dict(minimal)


def test_bad_source_name(minimal):
    del minimal["source"]
    minimal["sources"] = {"NYSE": {"format": "json", "path": "a/{partition}"}}
    with pytest.raises(SpecError, match=r"^spec ticks: sources.NYSE: source names must match"):
        spec_from_dict(minimal)


def test_empty_sources(minimal):
    del minimal["source"]
    minimal["sources"] = {}
    with pytest.raises(SpecError, match=r"^spec ticks: sources: expected at least one source$"):
        spec_from_dict(minimal)


def test_dict_without_feed_is_named_dict():
    with pytest.raises(SpecError, match=r"^spec <dict>: \(top level\): expected a mapping of spec keys, got a list$"):
        spec_from_dict([1])


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", r"^spec {p}: \(top level\): the file is empty$"),
        ("feed: [1,\n", r"^spec {p}: line \d+, column \d+: invalid YAML: "),
        ("- 1\n", r"^spec {p}: \(top level\): expected a mapping of spec keys, got a list$"),
    ],
)
def test_file_level_errors(tmp_path, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match=expected.format(p=str(path))) as err:
        load_spec(path)
    assert "\n" not in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(SpecError, match=r"^spec .*nope.yaml: file not found$"):
        load_spec(tmp_path / "nope.yaml")


def test_overrides_need_a_mapping_file(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n")
    with pytest.raises(SpecError, match=r"\(top level\): expected a mapping"):
        load_spec(path, overrides={"warehouse": "x"})


AVRO_QUOTE = {"type": "record", "name": "Quote", "fields": [{"name": "px", "type": "double"}]}


def test_an_avro_value_schema_is_kept_as_json_and_round_trips(tmp_path):
    import json

    from waterline.spec import spec_from_dict

    source = {"format": "kafka", "bootstrap": "h:1", "topic": "t",
              "value": {"format": "avro", "schema": AVRO_QUOTE, "wire": "confluent"}}
    spec = spec_from_dict({"feed": "ticks", "warehouse": str(tmp_path), "source": source,
                           "partitions": {"daily": {"start": "2026-01-01"}}, "key": ["id"], "event_time": "ts",
                           "partition_by": "date(ts)", "tiers": {"rt": "TRUE"}}, spec_file="s.yaml")
    kafka = spec.sources["source"].kafka
    assert (kafka.value_format, json.loads(kafka.value_schema), kafka.value_wire) == ("avro", AVRO_QUOTE, "confluent")
    assert kafka.to_dict()["value"] == {"format": "avro", "schema": json.dumps(AVRO_QUOTE), "wire": "confluent"}


@pytest.mark.parametrize(
    "patch, key_path, reason",
    [
        ({"source": {"format": "kafka", "topic": "t"}}, "source.bootstrap", "required key is missing"),
        ({"source": {"format": "kafka", "bootstrap": "h:1", "topic": "t", "topics": ["u"]}}, "source.topic",
         "give exactly one of `topic`"),
        ({"source": {"format": "kafka", "bootstrap": "h:1", "topic": "a b"}}, "source.topic",
         "Kafka topic names are [A-Za-z0-9._-]"),
        ({"source": {"format": "kafka", "bootstrap": "h:1", "topic": "t", "value": {"format": "xml", "schema": "x INT"}}},
         "source.value.format", "expected one of json, csv, avro, got 'xml'"),
        ({"source": {"format": "kafka", "bootstrap": "h:1", "topic": "t", "value": {"format": "avro", "schema": "x INT"}}},
         "source.value.schema", "an Avro schema is JSON (or a YAML mapping)"),
        ({"source": {"format": "kafka", "bootstrap": "h:1", "topic": "t",
                     "value": {"format": "avro", "schema": {"type": "enum", "symbols": ["A"]}}}},
         "source.value.schema", "expected an Avro record schema"),
        ({"source": {"format": "kafka", "bootstrap": "h:1", "topic": "t",
                     "value": {"format": "avro", "schema": AVRO_QUOTE, "wire": "registry"}}},
         "source.value.wire", "expected one of plain, confluent, got 'registry'"),
        ({"source": {"format": "kafka", "bootstrap": "h:1", "topic": "t",
                     "value": {"format": "json", "schema": "x INT", "wire": "confluent"}}},
         "source.value.wire", "only an avro value has a wire format"),
        ({"source": {"format": "kafka", "bootstrap": "h:1", "topic": "t", "options": {"subscribe": "u"}}},
         "source.options.subscribe", "set by waterline from `bootstrap`"),
        ({"source": {"format": "kafka", "bootstrap": "h:1", "topic": "t"}, "partition_by": "date(ts)",
          "job": "m:f"}, "job", "a Python job is not supported for streams"),
        ({"partition_by": "date(ts)"}, "partition_by", "only a stream feed (a source of format: kafka) has it"),
        ({"source": None, "sources": {"a": {"format": "kafka", "bootstrap": "h:1", "topic": "t"},
                                      "b": {"format": "json", "path": "d/{partition}/"}}, "partition_by": "date(ts)"},
         "sources", "a feed streams from Kafka or reads partitions of files, not both"),
    ],
)
def test_stream_spec_errors_name_the_key(tmp_path, patch, key_path, reason):
    from waterline.spec import SpecError, deep_merge, spec_from_dict

    base = {"feed": "ticks", "warehouse": str(tmp_path), "source": {"format": "json", "path": "d/{partition}/"},
            "partitions": {"daily": {"start": "2026-01-01"}}, "key": ["id"], "event_time": "ts",
            "tiers": {"rt": "TRUE"}}
    if "source" in patch:  # a patch's source replaces the base's whole (None: it has `sources`)
        base.pop("source")
    with pytest.raises(SpecError) as err:
        spec_from_dict(deep_merge(base, {k: v for k, v in patch.items() if v is not None}), spec_file="s.yaml")
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"spec s.yaml: {key_path}: "), message
    assert reason in message, message
