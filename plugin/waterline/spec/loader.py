"""Load feed specs from YAML or dicts, validating every key.

Every error is one `SpecError` line: ``spec <file>: <key.path>: <what is wrong>``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterable, Mapping

import pendulum
import yaml

from waterline.errors import SpecError
from waterline.spec.checker import JOB_PATTERN, SpecChecker, describe
from waterline.spec.model import DEFAULT_LEAD_SECONDS, LATE_POLICIES, FeedSpec
from waterline.spec.schema import REQUIRED_KEYS, TOP_LEVEL_KEYS
from waterline.spec.sections import (
    parse_audiences,
    parse_maintenance,
    parse_partitions,
    parse_sources,
    parse_tiers,
    parse_warehouse,
    parse_waterline,
    reserved_tier_problem,
)
from waterline.spec.output_checks import check_output, check_policies, check_transform
from waterline.spec.spark import parse_spark
from waterline.spec.stream_sql import row_wise_problem


def spec_from_dict(
    data: Mapping[str, Any], *, base_dir: str | Path | None = None, spec_file: str | None = None
) -> FeedSpec:
    """Validate ``data`` (the YAML mapping) into a FeedSpec.

    Relative ``warehouse`` and source paths resolve against ``base_dir``
    (default: the working directory). ``spec_file`` only names the spec in errors.
    """
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    check = _top_level(data, spec_file)
    # Keys are checked in this order; the first failure is the one error a user sees.
    feed = check.name(data["feed"], "feed", "feed")
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        check.fail("description", f"expected a string, got {describe(description)}")
    partitions = parse_partitions(check, data["partitions"])
    sources = parse_sources(check, data, base, partitions.kind)
    transform, job = _transform_and_job(check, data)
    key = _key(check, data["key"])
    event_time = check.column(data["event_time"], "event_time")
    timezone = _timezone(check, data.get("timezone", "UTC"))
    waterline = parse_waterline(check, data.get("waterline", {"mode": "clock"}))
    tiers = parse_tiers(check, data["tiers"])
    late, interval, freshness, lead = _release_timing(check, data, waterline.mode)
    partition_by, remove_when = _stream_keys(check, data, sources, transform, job)

    spec = FeedSpec(
        feed=feed,
        warehouse=parse_warehouse(check, data["warehouse"], base),
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
        audiences=parse_audiences(check, data.get("audiences"), tiers),
        maintenance=parse_maintenance(check, data.get("maintenance")),
        partition_by=partition_by,
        remove_when=remove_when,
        spec_file=spec_file,
        base_dir=base,
    )
    # What can be checked against the output without Spark: the same refusals for every adapter.
    check_policies(spec, check_output(check, spec))
    return spec


def _top_level(data: Mapping[str, Any], spec_file: str | None) -> SpecChecker:
    """The checker naming the spec in its errors, once ``data`` is a mapping of known keys
    holding every required one."""
    feed_hint = data.get("feed") if isinstance(data, Mapping) and isinstance(data.get("feed"), str) else None
    check = SpecChecker(f"spec {spec_file or feed_hint or '<dict>'}")
    check.mapping(data, "(top level)", "a mapping of spec keys")
    check.only_keys(data, TOP_LEVEL_KEYS, "")
    for key in REQUIRED_KEYS:
        if key not in data:
            check.fail(key, "required key is missing")
    return check


def _transform_and_job(check: SpecChecker, data: Mapping) -> tuple[str | None, str | None]:
    """``transform`` (SQL that parses) and ``job`` (``module.path:function``), each optional."""
    transform = data.get("transform")
    if transform is not None:
        transform = check.text(transform, "transform").strip()
        check_transform(check, transform)
    job = data.get("job")
    if job is not None:
        job = check.text(job, "job").strip()
        if not JOB_PATTERN.match(job):
            check.fail("job", f"expected 'module.path:function', got {job!r}")
    return transform, job


def _key(check: SpecChecker, key: Any) -> tuple[str, ...]:
    """``key``: a non-empty list of distinct column names (or one name)."""
    if isinstance(key, str):  # `key: id` reads naturally for a one-column key
        key = [key]
    if not isinstance(key, list) or not key:
        check.fail("key", f"expected a non-empty list of column names, got {describe(key)}")
    key = tuple(check.column(col, f"key[{i}]") for i, col in enumerate(key))
    duplicates = sorted({c for c in key if key.count(c) > 1})
    if duplicates:
        check.fail("key", f"duplicate column {duplicates[0]!r}")
    return key


def _timezone(check: SpecChecker, timezone: Any) -> str:
    """``timezone``: an IANA time zone name."""
    check.text(timezone, "timezone")
    try:
        pendulum.timezone(timezone)
    except Exception:  # pendulum raises InvalidTimezone, or ValueError for odd strings
        check.fail("timezone", f"unknown IANA time zone {timezone!r} (e.g. UTC, America/New_York)")
    return timezone


def _release_timing(check: SpecChecker, data: Mapping, mode: str) -> tuple[str, int, int | None, int]:
    """``late``, ``release_interval_seconds``, ``freshness_lag_seconds`` and
    ``release_lead_seconds``; ``mode``: the waterline's (``late`` other than publish needs event)."""
    late = check.choice(data.get("late", "publish"), LATE_POLICIES, "late")
    if late != "publish" and mode != "event":
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
    return late, interval, freshness, lead


def _stream_keys(check: SpecChecker, data: Mapping, sources: Mapping, transform: str | None,
                 job: str | None) -> tuple[str | None, str | None]:
    """``partition_by`` and ``remove_when``: required and optional for a stream feed, refused
    for a feed of files (whose partitions are what each ingest reads)."""
    streams = [name for name, source in sources.items() if source.is_stream]
    partition_by, remove_when = data.get("partition_by"), data.get("remove_when")
    if not streams:
        for key in ("partition_by", "remove_when"):
            if data.get(key) is not None:
                check.fail(key, "only a stream feed (a source of format: kafka) has it: a feed of files "
                                "is ingested by partition, and a partition's output replaces its rows")
        return None, None
    if len(streams) != len(sources):
        files = sorted(set(sources) - set(streams))
        check.fail("sources", f"a feed streams from Kafka or reads partitions of files, not both "
                              f"(kafka: {', '.join(streams)}; files: {', '.join(files)})")
    if job is not None:
        check.fail("job", "a stream feed runs its `transform` on each micro-batch; a Python job is not supported for streams")
    problem = row_wise_problem(transform)
    if problem is not None:
        check.fail("transform", problem)
    if partition_by is None:
        check.fail("partition_by", "required for a stream feed: Spark SQL over an output row giving its partition "
                                   "key, e.g. \"date(event_time)\" for daily partitions")
    partition_by = check.text(partition_by, "partition_by").strip()
    if remove_when is not None:
        remove_when = check.text(remove_when, "remove_when").strip()
    return partition_by, remove_when


class _SpecYamlLoader(yaml.SafeLoader):
    """YAML's safe loader, except that a date-like scalar naming no real date or time
    (``2026-02-30``, ``2026-01-05 25:00``) stays the string it is. PyYAML's own constructor
    raises a bare ValueError there, naming neither the file nor the key; kept as text, the
    key's own check refuses it in one line naming the key."""


def _lenient_timestamp(loader: yaml.SafeLoader, node: yaml.ScalarNode):
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except ValueError:
        return loader.construct_scalar(node)


_SpecYamlLoader.add_constructor("tag:yaml.org,2002:timestamp", _lenient_timestamp)


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
        data = yaml.load(text, Loader=_SpecYamlLoader)  # noqa: S506 (a SafeLoader, see below)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(yaml)"
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(f"{origin}: {where}: invalid YAML: {problem}") from None
    if data is None:
        raise SpecError(f"{origin}: (top level): the file is empty")
    if overrides:
        if not isinstance(data, Mapping):
            raise SpecError(f"{origin}: (top level): expected a mapping of spec keys, got {describe(data)}")
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
    DAG file when it loads, not every run after it (a spec loaded from YAML or a dict was
    checked then; a FeedSpec built directly is checked here)."""
    if isinstance(paths_or_specs, (str, Path, FeedSpec)):
        paths_or_specs = [paths_or_specs]
    specs = [s if isinstance(s, FeedSpec) else load_spec(s, base_dir=base_dir) for s in paths_or_specs]
    seen: dict[str, str] = {}
    for spec in specs:
        if spec.feed in seen:
            raise SpecError(f"feed {spec.feed} is defined twice ({seen[spec.feed]} and {spec.origin})")
        seen[spec.feed] = spec.origin
        for tier in spec.tiers:  # a FeedSpec built directly skipped the loader's check of names
            taken = reserved_tier_problem(tier)
            if taken:
                raise SpecError(f"{spec.origin}: tiers.{tier}: {taken}")
        check_policies(spec)
    return specs


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
