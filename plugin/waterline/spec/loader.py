"""Load feed specs from YAML or dicts, validating every key.

Every error is one `SpecError` line: ``spec <file>: <key.path>: <what is wrong>``.
"""

from __future__ import annotations

import copy
import difflib
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

import pendulum
import yaml

from waterline.spec.durations import parse_duration
from waterline.spec.errors import SpecError
from waterline.spec.model import (
    DEFAULT_LEAD_SECONDS,
    DEFAULT_SOURCE,
    LATE_POLICIES,
    PATH_PLACEHOLDERS,
    SOURCE_FORMATS,
    WATERLINE_MODES,
    FeedSpec,
    SourceSpec,
    WaterlineSpec,
)
from waterline.spec.partitions import PARTITION_KINDS, PartitionScheme, normalise_time_key
from waterline.spec.spark import parse_spark

TOP_LEVEL_KEYS = (
    "feed", "description", "warehouse", "source", "sources", "partitions", "transform", "job",
    "key", "event_time", "timezone", "waterline", "tiers", "late", "release_interval_seconds", "release_lead_seconds",
    "freshness_lag_seconds", "spark",
)
REQUIRED_KEYS = ("feed", "warehouse", "partitions", "key", "event_time", "tiers")
SOURCE_KEYS = ("format", "path", "options")
WATERLINE_KEYS = ("mode", "lateness", "idle_after")
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_NAME_LENGTH = 40
# Output columns are used unquoted in generated SQL; `_wl_` is reserved for system columns.
COLUMN_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
JOB_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")


class _Checker:
    """Raises SpecErrors prefixed with the spec's origin and the key path."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def fail(self, path: str, reason: str) -> None:
        raise SpecError(f"{self.origin}: {path}: {reason}")

    def mapping(self, value: Any, path: str, what: str = "a mapping") -> Mapping:
        if not isinstance(value, Mapping):
            self.fail(path, f"expected {what}, got {_describe(value)}")
        for key in value:
            if not isinstance(key, str):
                self.fail(path, f"keys must be strings, got {key!r}")
        return value

    def only_keys(self, value: Mapping, allowed: Iterable[str], path: str) -> None:
        allowed = tuple(allowed)
        for key in value:
            if key not in allowed:
                where = f"{path}.{key}" if path else key
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f" (valid keys: {', '.join(allowed)})"
                self.fail(where, f"unknown key{hint}")

    def text(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(path, f"expected a non-empty string, got {_describe(value)}")
        return value

    def name(self, value: Any, path: str, what: str) -> str:
        value = self.text(value, path)
        if not NAME_PATTERN.match(value):
            self.fail(path, f"{what} names must match [a-z][a-z0-9_]* (used in table paths and column names), got {value!r}")
        if len(value) > MAX_NAME_LENGTH:
            self.fail(path, f"{what} names are at most {MAX_NAME_LENGTH} characters, got {len(value)}")
        return value

    def column(self, value: Any, path: str) -> str:
        value = self.text(value, path)
        if not COLUMN_PATTERN.match(value):
            self.fail(path, f"column names must match [A-Za-z_][A-Za-z0-9_]*, got {value!r}")
        if value.lower().startswith("_wl_"):
            self.fail(path, f"column names starting with _wl_ are reserved for waterline's system columns, got {value!r}")
        return value

    def choice(self, value: Any, allowed: tuple[str, ...], path: str) -> str:
        if value not in allowed:
            self.fail(path, f"expected one of {', '.join(allowed)}, got {value!r}")
        return value

    def duration(self, value: Any, path: str):
        try:
            return parse_duration(value)
        except ValueError as exc:
            self.fail(path, str(exc))


def spec_from_dict(
    data: Mapping[str, Any], *, base_dir: str | Path | None = None, spec_file: str | None = None
) -> FeedSpec:
    """Validate ``data`` (the YAML mapping) into a FeedSpec.

    Relative ``warehouse`` and source paths resolve against ``base_dir``
    (default: the working directory). ``spec_file`` only names the spec in errors.
    """
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    feed_hint = data.get("feed") if isinstance(data, Mapping) and isinstance(data.get("feed"), str) else None
    check = _Checker(f"spec {spec_file or feed_hint or '<dict>'}")
    check.mapping(data, "(top level)", "a mapping of spec keys")
    check.only_keys(data, TOP_LEVEL_KEYS, "")
    for key in REQUIRED_KEYS:
        if key not in data:
            check.fail(key, "required key is missing")

    feed = check.name(data["feed"], "feed", "feed")
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        check.fail("description", f"expected a string, got {_describe(description)}")
    partitions = _partitions(check, data["partitions"])
    sources = _sources(check, data, base, partitions.kind)
    transform = data.get("transform")
    if transform is not None:
        transform = check.text(transform, "transform").strip()
    job = data.get("job")
    if job is not None:
        job = check.text(job, "job").strip()
        if not JOB_PATTERN.match(job):
            check.fail("job", f"expected 'module.path:function', got {job!r}")

    key = data["key"]
    if isinstance(key, str):  # `key: id` reads naturally for a one-column key
        key = [key]
    if not isinstance(key, list) or not key:
        check.fail("key", f"expected a non-empty list of column names, got {_describe(key)}")
    key = tuple(check.column(col, f"key[{i}]") for i, col in enumerate(key))
    duplicates = sorted({c for c in key if key.count(c) > 1})
    if duplicates:
        check.fail("key", f"duplicate column {duplicates[0]!r}")
    event_time = check.column(data["event_time"], "event_time")

    timezone = data.get("timezone", "UTC")
    check.text(timezone, "timezone")
    try:
        pendulum.timezone(timezone)
    except Exception:  # pendulum raises InvalidTimezone, or ValueError for odd strings
        check.fail("timezone", f"unknown IANA time zone {timezone!r} (e.g. UTC, America/New_York)")

    waterline = _waterline(check, data.get("waterline", {"mode": "clock"}))
    tiers = _tiers(check, data["tiers"])
    late = check.choice(data.get("late", "publish"), LATE_POLICIES, "late")
    if late != "publish" and waterline.mode != "event":
        check.fail("late", f"late: {late} needs waterline mode event (rows are late relative to the event waterline)")
    interval = data.get("release_interval_seconds", 30)
    if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
        check.fail("release_interval_seconds", f"expected an integer >= 1, got {interval!r}")
    freshness = data.get("freshness_lag_seconds")
    if freshness is not None and (isinstance(freshness, bool) or not isinstance(freshness, int) or freshness < 1):
        check.fail("freshness_lag_seconds", f"expected an integer >= 1 (seconds), got {freshness!r}")
    lead = data.get("release_lead_seconds", DEFAULT_LEAD_SECONDS)
    if isinstance(lead, bool) or not isinstance(lead, int) or lead < 0:
        check.fail("release_lead_seconds", f"expected an integer >= 0 (seconds before a due moment), got {lead!r}")

    return FeedSpec(
        feed=feed,
        warehouse=_warehouse(check, data["warehouse"], base),
        sources=sources,
        partitions=partitions,
        key=key,
        event_time=event_time,
        tiers=tiers,
        transform=transform,
        job=job,
        timezone=timezone,
        waterline=waterline,
        late=late,
        release_interval_seconds=interval,
        release_lead_seconds=lead,
        freshness_lag_seconds=freshness,
        description=description,
        spark=parse_spark(check, data["spark"]) if data.get("spark") is not None else None,
        spec_file=spec_file,
        base_dir=base,
    )


def load_spec(
    path: str | Path, *, base_dir: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> FeedSpec:
    """Read and validate one YAML spec.

    ``overrides`` is deep-merged into the YAML before validation (a ``None``
    value deletes the key); tests use it to point the warehouse at a temp dir.
    """
    path_text = str(path)
    origin = f"spec {path_text}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{origin}: file not found") from None
    except OSError as exc:
        raise SpecError(f"{origin}: cannot read: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(yaml)"
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(f"{origin}: {where}: invalid YAML: {problem}") from None
    if data is None:
        raise SpecError(f"{origin}: (top level): the file is empty")
    if overrides:
        if not isinstance(data, Mapping):
            raise SpecError(f"{origin}: (top level): expected a mapping of spec keys, got {_describe(data)}")
        data = deep_merge(data, overrides)
    return spec_from_dict(data, base_dir=base_dir, spec_file=path_text)


def load_specs(
    paths: Iterable[str | Path], *, base_dir: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> list[FeedSpec]:
    """Load several specs; feed names must be unique across them."""
    specs: list[FeedSpec] = []
    seen: dict[str, str] = {}
    for path in paths:
        spec = load_spec(path, base_dir=base_dir, overrides=overrides)
        if spec.feed in seen:
            raise SpecError(f"spec {path}: feed: {spec.feed!r} is already defined by {seen[spec.feed]}")
        seen[spec.feed] = str(path)
        specs.append(spec)
    return specs


def load_feed_specs(
    paths_or_specs: "str | Path | FeedSpec | Iterable[str | Path | FeedSpec]", *, base_dir: str | Path | None = None
) -> list[FeedSpec]:
    """FeedSpecs from spec objects and/or YAML paths (one or many); feed names must be unique.

    What the orchestrator factories (Dagster definitions, Airflow DAGs) take. Each
    tier's policy is compiled here, and checked against the output's columns when
    the spec names them (`check_policies`): a bad policy fails the code location or
    DAG file when it loads, not every run after it."""
    if isinstance(paths_or_specs, (str, Path, FeedSpec)):
        paths_or_specs = [paths_or_specs]
    specs = [s if isinstance(s, FeedSpec) else load_spec(s, base_dir=base_dir) for s in paths_or_specs]
    seen: dict[str, str] = {}
    for spec in specs:
        if spec.feed in seen:
            raise SpecError(f"feed {spec.feed} is defined twice ({seen[spec.feed]} and {spec.origin})")
        seen[spec.feed] = spec.origin
        check_policies(spec)
    return specs


def check_policies(spec: FeedSpec) -> None:
    """Compile every tier's policy (pure Python, no Spark) and, when the transform's select
    list or the declared schema names the output's columns, refuse a policy naming another
    column: `waterline plan`'s checks. Raises a one-line PolicyError naming spec and tier."""
    from waterline.errors import WaterlineError
    from waterline.policy import check_policy_columns, compile_policy
    from waterline.spec.columns import output_columns

    known = output_columns(spec).names
    for tier, policy in spec.tiers.items():
        try:
            compile_policy(policy, tier=tier)
            if known is not None:
                check_policy_columns(policy, known, tier=tier)
        except WaterlineError as exc:
            raise type(exc)(f"{spec.origin}: {exc}") from None


def deep_merge(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` merged in, recursively for nested mappings; None deletes."""
    merged = copy.deepcopy(dict(base))
    for key, value in overrides.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


# -- sections -----------------------------------------------------------------


def _partitions(check: _Checker, value: Any) -> PartitionScheme:
    value = check.mapping(value, "partitions", "one of {daily: {start: ...}}, {hourly: {start: ...}}, {static: [...]}")
    check.only_keys(value, PARTITION_KINDS, "partitions")
    if len(value) != 1:
        check.fail("partitions", f"expected exactly one of {', '.join(PARTITION_KINDS)}, got {len(value)}")
    kind, body = next(iter(value.items()))
    path = f"partitions.{kind}"
    if kind == "static":
        if not isinstance(body, list) or not body:
            check.fail(path, f"expected a non-empty list of partition values, got {_describe(body)}")
        values = []
        for i, item in enumerate(body):
            if isinstance(item, bool) or not isinstance(item, (str, int)):
                check.fail(f"{path}[{i}]", f"expected a string, got {_describe(item)}")
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


def _sources(check: _Checker, data: Mapping, base: Path, kind: str) -> dict[str, SourceSpec]:
    if ("source" in data) == ("sources" in data):
        check.fail("source", "give exactly one of `source` (one input) or `sources` (named inputs)")
    if "source" in data:
        return {DEFAULT_SOURCE: _source(check, data["source"], "source", base, kind)}
    named = check.mapping(data["sources"], "sources", "a mapping of source name -> source")
    if not named:
        check.fail("sources", "expected at least one source")
    if len(named) > 1 and DEFAULT_SOURCE in named:
        check.fail(f"sources.{DEFAULT_SOURCE}", "the view `source` is the union of all sources; name this source otherwise")
    return {
        check.name(name, f"sources.{name}", "source"): _source(check, body, f"sources.{name}", base, kind)
        for name, body in named.items()
    }


def _source(check: _Checker, value: Any, path: str, base: Path, kind: str) -> SourceSpec:
    value = check.mapping(value, path, "a mapping {format: ..., path: ...}")
    check.only_keys(value, SOURCE_KEYS, path)
    for key in ("format", "path"):
        if key not in value:
            check.fail(f"{path}.{key}", "required key is missing")
    fmt = check.choice(value["format"], SOURCE_FORMATS, f"{path}.format")
    template = check.text(value["path"], f"{path}.path").strip()
    options_in = check.mapping(value.get("options") or {}, f"{path}.options")
    options = {}
    for key, option in options_in.items():
        if isinstance(option, bool):
            options[key] = "true" if option else "false"  # Spark's spelling
        elif isinstance(option, (str, int, float)):
            options[key] = str(option)
        else:
            check.fail(f"{path}.options.{key}", f"expected a string, number or boolean, got {_describe(option)}")
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
    return SourceSpec(format=fmt, path=_resolve(template, base), options=options)


def _waterline(check: _Checker, value: Any) -> WaterlineSpec:
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


def _tiers(check: _Checker, value: Any) -> dict[str, str]:
    value = check.mapping(value, "tiers", "a mapping of tier name -> policy")
    if not value:
        check.fail("tiers", "expected at least one tier")
    tiers = {}
    for name, policy in value.items():
        check.name(name, f"tiers.{name}", "tier")
        if isinstance(policy, bool):  # unquoted TRUE/FALSE in YAML is a boolean
            policy = "TRUE" if policy else "FALSE"
        if not isinstance(policy, str) or not policy.strip():
            check.fail(f"tiers.{name}", f"expected a policy (a SQL boolean expression string), got {_describe(policy)}")
        tiers[name] = policy.strip()
    return tiers


# -- helpers ------------------------------------------------------------------


def _resolve(path: str, base: Path) -> str:
    """Absolute path for local paths; URIs (``s3://``, ``file:/``) are kept as written."""
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:/", path):
        return path
    expanded = Path(path).expanduser()
    return str(expanded if expanded.is_absolute() else base / expanded)


def _warehouse(check: _Checker, value: Any, base: Path) -> Path | str:
    """A local folder (absolute Path) or an object-store URI kept as written (``s3a://bucket/prefix``)."""
    text = check.text(value, "warehouse").strip()
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):/", text)
    if not match:
        return Path(_resolve(text, base))
    if match.group(1).lower() not in ("s3a", "s3"):
        check.fail("warehouse", f"expected a local folder or an s3a://bucket/prefix URI, got {text!r}")
    if not re.match(r"^[A-Za-z0-9+.-]+://[^/]+", text):
        check.fail("warehouse", f"expected s3a://bucket/prefix, got {text!r} (no bucket)")
    return text.rstrip("/")


def _describe(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"{type(value).__name__} {value!r}"
