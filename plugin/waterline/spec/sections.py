"""Parsers of the spec's structured keys (partitions, sources, waterline, tiers, audiences,
warehouse, maintenance): raw YAML values in, model objects out, errors through a `SpecChecker`."""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, Mapping

from waterline.spec.checker import KAFKA_SOURCE_KEYS, MAINTENANCE_KEYS, SOURCE_KEYS, WATERLINE_KEYS, SpecChecker, describe
from waterline.clock import duration_text
from waterline.spec.model import (
    DEFAULT_SOURCE,
    KAFKA_AVRO_WIRES,
    KAFKA_VALUE_FORMATS,
    MIN_TIME_TRAVEL,
    PATH_PLACEHOLDERS,
    SOURCE_FORMATS,
    STREAM_FORMAT,
    WATERLINE_MODES,
    KafkaSpec,
    MaintenanceSpec,
    SourceSpec,
    WaterlineSpec,
)
from waterline.spec.partitions import PARTITION_KINDS, PartitionScheme, normalise_time_key

#: Names a tier cannot take: each already names a table of the feed (``<warehouse>/<feed>/held``,
#: ``.../quarantine``: `Feed.table_summary` and `waterline maintain` take a tier name or these)
#: or an asset beside the tiers' (``[feed, "held"]``, ``[feed, "audit_report"]`` in Dagster,
#: ``<feed>/held`` in Airflow). One rule, refused when any adapter loads the spec.
RESERVED_TIER_NAMES = {
    "held": "the feed's held table (and its Dagster and Airflow asset)",
    "quarantine": "the feed's quarantine table",
    "audit_report": "the feed's audit report asset in Dagster",
}


def reserved_tier_problem(name: str) -> str | None:
    """Why ``name`` cannot name a tier (it is a system table's or asset's), or None."""
    if name.lower().startswith("_wl"):
        return ("names starting with _wl are reserved for waterline's own tables (<feed>/_wl_proofs, "
                "_wl_stream, _wl_lease) and columns; rename the tier")
    if name.lower() in RESERVED_TIER_NAMES:
        return f"{name!r} names {RESERVED_TIER_NAMES[name.lower()]}; rename the tier"
    return None


def parse_partitions(check: SpecChecker, value: Any) -> PartitionScheme:
    value = check.mapping(value, "partitions", "one of {daily: {start: ...}}, {hourly: {start: ...}}, {static: [...]}")
    check.only_keys(value, PARTITION_KINDS, "partitions")
    if len(value) != 1:
        check.fail("partitions", f"expected exactly one of {', '.join(PARTITION_KINDS)}, got {len(value)}")
    kind, body = next(iter(value.items()))
    path = f"partitions.{kind}"
    if kind == "static":
        if not isinstance(body, list) or not body:
            check.fail(path, f"expected a non-empty list of partition values, got {describe(body)}")
        values = []
        for i, item in enumerate(body):
            if isinstance(item, date) and not isinstance(item, datetime):  # YAML reads 2026-01-05 as a date
                item = item.isoformat()
            if isinstance(item, bool) or not isinstance(item, (str, int)):
                check.fail(f"{path}[{i}]", f"expected a string, got {describe(item)}")
            item = str(item)
            if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.=-]*$", item):
                check.fail(f"{path}[{i}]", f"static partition values must match [A-Za-z0-9][A-Za-z0-9_.=-]* (used in paths), got {item!r}")
            if item in values:
                check.fail(f"{path}[{i}]", f"duplicate value {item!r}")
            values.append(item)
        return PartitionScheme(kind="static", values=tuple(values), origin=check.origin)
    body = check.mapping(body, path, "a mapping {start: ..., end: ...}")
    check.only_keys(body, ("start", "end"), path)
    if "start" not in body:
        check.fail(f"{path}.start", "required key is missing")
    bounds = {}
    for bound in ("start", "end"):
        if body.get(bound) is None:
            continue
        try:
            bounds[bound] = normalise_time_key(kind, body[bound])
        except ValueError as exc:
            check.fail(f"{path}.{bound}", str(exc))
    if "end" in bounds and bounds["end"] < bounds["start"]:  # keys sort chronologically
        check.fail(f"{path}.end", f"{bounds['end']} is before start {bounds['start']}")
    return PartitionScheme(kind=kind, start=bounds["start"], end=bounds.get("end"), origin=check.origin)


def parse_sources(check: SpecChecker, data: Mapping, base: Path, kind: str) -> dict[str, SourceSpec]:
    if ("source" in data) == ("sources" in data):
        check.fail("source", "give exactly one of `source` (one input) or `sources` (named inputs)")
    if "source" in data:
        return {DEFAULT_SOURCE: parse_source(check, data["source"], "source", base, kind)}
    named = check.mapping(data["sources"], "sources", "a mapping of source name -> source")
    if not named:
        check.fail("sources", "expected at least one source")
    if len(named) > 1 and DEFAULT_SOURCE in named:
        check.fail(f"sources.{DEFAULT_SOURCE}", "the view `source` is the union of all sources; name this source otherwise")
    return {
        check.name(name, f"sources.{name}", "source"): parse_source(check, body, f"sources.{name}", base, kind)
        for name, body in named.items()
    }


def parse_source(check: SpecChecker, value: Any, path: str, base: Path, kind: str) -> SourceSpec:
    value = check.mapping(value, path, "a mapping {format: ..., path: ...}")
    if value.get("format") == STREAM_FORMAT:
        return parse_kafka_source(check, value, path)
    check.only_keys(value, SOURCE_KEYS, path)
    for key in ("format", "path"):
        if key not in value:
            check.fail(f"{path}.{key}", "required key is missing")
    fmt = check.choice(value["format"], (*SOURCE_FORMATS, STREAM_FORMAT), f"{path}.format")
    template = check.text(value["path"], f"{path}.path").strip()
    options = _options(check, value.get("options"), path)
    source = SourceSpec(format=fmt, path=template, options=options)
    try:
        names = source.placeholders()
    except ValueError as exc:
        check.fail(f"{path}.path", f"bad placeholder in {template!r}: {exc}")
    allowed = PATH_PLACEHOLDERS[kind]
    for name in names:
        if name not in allowed:
            check.fail(f"{path}.path", f"unknown placeholder {{{name}}} for {kind} partitions (allowed: {', '.join('{' + a + '}' for a in allowed)})")
    if not names and fmt != "delta":
        check.fail(f"{path}.path", "a file source needs a {partition} placeholder, or every partition would read the same files")
    if "{partition}" in template and kind == "hourly" and "://" not in template:
        check.fail(f"{path}.path", "hourly keys contain ':', which Hadoop paths cannot hold; use {date}/{hour}")
    return SourceSpec(format=fmt, path=resolve_path(template, base), options=options)


def _options(check: SpecChecker, value: Any, path: str) -> dict[str, str]:
    """Reader options as Spark takes them: text, with booleans spelled as Spark does."""
    options = {}
    for key, option in check.mapping(value or {}, f"{path}.options").items():
        if isinstance(option, bool):
            options[key] = "true" if option else "false"  # Spark's spelling
        elif isinstance(option, (str, int, float)):
            options[key] = str(option)
        else:
            check.fail(f"{path}.options.{key}", f"expected a string, number or boolean, got {describe(option)}")
    return options


#: Kafka client settings that carry secrets: the spec is committed to git, so these come
#: from the environment (`waterline.engine.ingest.stream.source.credential_options`).
_SECRET_WORDS = ("password", "jaas", "secret", "credential")


def parse_kafka_source(check: SpecChecker, value: Mapping, path: str) -> SourceSpec:
    """``{format: kafka, bootstrap, topic | topics, value: {format, schema}, starting_offsets, options}``."""
    check.only_keys(value, KAFKA_SOURCE_KEYS, path)
    if "bootstrap" not in value:
        check.fail(f"{path}.bootstrap", "required key is missing (host:port[,host:port...] of the Kafka brokers)")
    bootstrap = check.text(value["bootstrap"], f"{path}.bootstrap").strip()
    if ("topic" in value) == ("topics" in value):
        check.fail(f"{path}.topic", "give exactly one of `topic` (one topic) or `topics` (a list)")
    if "topic" in value:
        topics = (check.text(value["topic"], f"{path}.topic").strip(),)
    else:
        listed = value["topics"]
        if not isinstance(listed, list) or not listed:
            check.fail(f"{path}.topics", f"expected a non-empty list of topic names, got {describe(listed)}")
        topics = tuple(check.text(t, f"{path}.topics[{i}]").strip() for i, t in enumerate(listed))
    for i, topic in enumerate(topics):
        if not re.match(r"^[A-Za-z0-9._-]{1,249}$", topic):
            check.fail(f"{path}.topics[{i}]" if "topics" in value else f"{path}.topic",
                       f"Kafka topic names are [A-Za-z0-9._-], up to 249 characters; got {topic!r}")
    value_format = value_schema = None
    wire = "plain"
    if value.get("value") is not None:
        value_format, value_schema, wire = _kafka_value(check, value["value"], f"{path}.value")
    starting = value.get("starting_offsets", "earliest")
    if starting not in ("earliest", "latest"):
        starting = check.text(starting, f"{path}.starting_offsets")
        if not starting.lstrip().startswith("{"):
            check.fail(f"{path}.starting_offsets", f"expected earliest, latest or Spark's JSON of offsets per partition, got {starting!r}")
    options = _options(check, value.get("options"), path)
    for key in options:
        if any(word in key.lower() for word in _SECRET_WORDS):
            check.fail(f"{path}.options.{key}", "credentials never go in a spec: set WATERLINE_KAFKA_"
                       f"{key.removeprefix('kafka.').upper().replace('.', '_')} in the environment instead")
        if key in ("subscribe", "subscribePattern", "assign", "kafka.bootstrap.servers", "startingOffsets"):
            check.fail(f"{path}.options.{key}", "set by waterline from `bootstrap`, `topic(s)` and `starting_offsets`")
    kafka = KafkaSpec(bootstrap=bootstrap, topics=topics, value_format=value_format, value_schema=value_schema,
                      starting_offsets=starting, value_wire=wire)
    return SourceSpec(format=STREAM_FORMAT, path="", options=options, kafka=kafka)


def _kafka_value(check: SpecChecker, value: Any, path: str) -> tuple[str, str, str]:
    """``{format: json|csv, schema: <Spark DDL>}`` or ``{format: avro, schema: <Avro schema,
    JSON text or a mapping>, wire: plain|confluent}``: (format, schema text, wire)."""
    decoded = check.mapping(value, path, "a mapping {format: json|csv|avro, schema: ...}")
    check.only_keys(decoded, ("format", "schema", "wire"), path)
    for key in ("format", "schema"):
        if key not in decoded:
            check.fail(f"{path}.{key}", "required key is missing")
    value_format = check.choice(decoded["format"], KAFKA_VALUE_FORMATS, f"{path}.format")
    if value_format != "avro":
        if "wire" in decoded:
            check.fail(f"{path}.wire", "only an avro value has a wire format")
        return value_format, check.text(decoded["schema"], f"{path}.schema").strip(), "plain"
    wire = check.choice(decoded.get("wire", "plain"), KAFKA_AVRO_WIRES, f"{path}.wire")
    schema = decoded["schema"]
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except ValueError as exc:
            check.fail(f"{path}.schema", f"an Avro schema is JSON (or a YAML mapping): {exc}")
    if not isinstance(schema, Mapping) or schema.get("type") != "record" or not isinstance(schema.get("fields"), list):
        check.fail(f"{path}.schema", 'expected an Avro record schema {"type": "record", "name": ..., "fields": [...]}, '
                   f"got {describe(schema)}")
    return value_format, json.dumps(schema), wire


def parse_waterline(check: SpecChecker, value: Any) -> WaterlineSpec:
    value = check.mapping(value, "waterline", "a mapping {mode: clock} or {mode: event, lateness: ...}")
    check.only_keys(value, WATERLINE_KEYS, "waterline")
    mode = check.choice(value.get("mode", "clock"), WATERLINE_MODES, "waterline.mode")
    if mode == "clock":
        for key in ("lateness", "idle_after"):
            if key in value:
                check.fail(f"waterline.{key}", "only applies to mode event")
        return WaterlineSpec(mode="clock")
    lateness = check.duration(value.get("lateness", "0 seconds"), "waterline.lateness")
    idle_after = value.get("idle_after")
    if idle_after is not None:
        idle_after = check.duration(idle_after, "waterline.idle_after")
        if not idle_after:
            check.fail("waterline.idle_after", "must be longer than 0 seconds")
    return WaterlineSpec(mode="event", lateness=lateness, idle_after=idle_after)


def parse_tiers(check: SpecChecker, value: Any) -> dict[str, str]:
    value = check.mapping(value, "tiers", "a mapping of tier name -> policy")
    if not value:
        check.fail("tiers", "expected at least one tier")
    tiers = {}
    for name, policy in value.items():
        taken = reserved_tier_problem(name) if isinstance(name, str) else None
        if taken:
            check.fail(f"tiers.{name}", taken)
        check.name(name, f"tiers.{name}", "tier")
        if isinstance(policy, bool):  # unquoted TRUE/FALSE in YAML is a boolean
            policy = "TRUE" if policy else "FALSE"
        if not isinstance(policy, str) or not policy.strip():
            check.fail(f"tiers.{name}", f"expected a policy (a SQL boolean expression string), got {describe(policy)}")
        tiers[name] = policy.strip()
    return tiers


def parse_audiences(check: SpecChecker, value: Any, tiers: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """``{recipient: [tier, ...]}``: who may read which tiers over Delta Sharing."""
    if value is None:
        return {}
    value = check.mapping(value, "audiences", "a mapping of recipient -> list of tiers")
    audiences: dict[str, tuple[str, ...]] = {}
    for name, body in value.items():
        path = f"audiences.{name}"
        check.name(name, path, "recipient")
        if isinstance(body, str):  # `acme: delayed_15m` reads naturally for one tier
            body = [body]
        if not isinstance(body, list) or not body:
            check.fail(path, f"expected a non-empty list of tier names, got {describe(body)}")
        for tier in body:
            if not isinstance(tier, str) or tier not in tiers:
                check.fail(path, f"unknown tier {tier!r} (tiers: {', '.join(tiers)})")
        audiences[name] = tuple(dict.fromkeys(body))
    return audiences


# -- helpers ------------------------------------------------------------------


def resolve_path(path: str, base: Path) -> str:
    """Absolute path for local paths; URIs (``s3://``, ``file:/``) are kept as written."""
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:/", path):
        return path
    expanded = Path(path).expanduser()
    return str(expanded if expanded.is_absolute() else base / expanded)


def parse_warehouse(check: SpecChecker, value: Any, base: Path) -> Path | str:
    """A local folder (absolute Path) or an object-store URI kept as written (``s3a://bucket/prefix``)."""
    text = check.text(value, "warehouse").strip()
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):/", text)
    if not match:
        return Path(resolve_path(text, base))
    if match.group(1).lower() not in ("s3a", "s3"):
        check.fail("warehouse", f"expected a local folder or an s3a://bucket/prefix URI, got {text!r}")
    if not re.match(r"^[A-Za-z0-9+.-]+://[^/]+", text):
        check.fail("warehouse", f"expected s3a://bucket/prefix, got {text!r} (no bucket)")
    return text.rstrip("/")


def parse_maintenance(check: SpecChecker, value: Any) -> MaintenanceSpec:
    """``maintenance: {time_travel: 7 days, every: 1 hour}`` (both optional)."""
    if value is None:
        return MaintenanceSpec()
    value = check.mapping(value, "maintenance", "a mapping {time_travel: 7 days, every: 1 hour}")
    check.only_keys(value, MAINTENANCE_KEYS, "maintenance")
    default = MaintenanceSpec()
    time_travel = check.duration(value.get("time_travel", duration_text(default.time_travel)),
                                 "maintenance.time_travel")
    if time_travel < MIN_TIME_TRAVEL:
        check.fail("maintenance.time_travel", f"at least {duration_text(MIN_TIME_TRAVEL)}: a vacuum must not "
                   "delete files a staged release or a signed sharing URL may still name")
    every = check.duration(value.get("every", duration_text(default.every)), "maintenance.every")
    minutes, rest = divmod(every, timedelta(minutes=1))
    if rest or not (minutes and 60 % minutes == 0 if minutes < 60
                    else minutes % 60 == 0 and (minutes == 1440 or 24 % (minutes // 60) == 0)):
        check.fail("maintenance.every", f"expected a period dividing an hour or a day (e.g. 15 minutes, 1 hour, "
                   f"6 hours, 1 day), got {duration_text(every)}: schedulers run it on a cron")
    return MaintenanceSpec(time_travel=time_travel, every=every)

