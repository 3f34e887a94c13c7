"""Checks of a spec against its own output: the transform parses, and the ``key``, the
``event_time`` and each tier's policy name columns the output has, of types that work.

Run by every spec load (`spec_from_dict`), so `waterline plan`, `waterline.load`, the
Dagster definitions and Component and the Airflow DAG factory refuse the same mistakes
with the same line, before any JVM. Where the output's columns are not known without Spark
(``SELECT *``, a Python job, a source without a declared schema) only what needs no
columns is checked; ingest (and `waterline plan SPEC --partition KEY`) checks the rest
against the real output.
"""

from __future__ import annotations

from waterline.errors import WaterlineError
from waterline.policy import compile_policy
from waterline.policy.plan import PolicyError
from waterline.spec.checker import SpecChecker
from waterline.spec.columns import OutputColumns, output_columns
from waterline.spec.model import FeedSpec
from waterline.spec.transform_sql import UnreadTransform, parse_transform

#: Types an event_time column may have: text is parsed at ingest, a TIMESTAMP_NTZ is read in
#: the spec's time zone (`waterline.engine.ingest.validate.parse_event_time`); nothing else.
EVENT_TIME_TYPES = ("timestamp", "timestamp_ntz", "string")


def check_transform(check: SpecChecker, transform: str | None) -> None:
    """Refuse a transform sqlglot's Spark dialect cannot parse, or several statements."""
    if transform is None:
        return
    try:
        parse_transform(transform)
    except UnreadTransform:  # Spark syntax sqlglot lacks: Spark judges it at ingest
        return
    except ValueError as exc:
        check.fail("transform", str(exc))


def check_output(check: SpecChecker, spec: FeedSpec) -> OutputColumns:
    """Refuse a key or event_time column the output does not have (when its columns are known),
    and an event_time of a type waterline cannot read as an instant (when its type is known)."""
    known = output_columns(spec)
    if known.names is None:
        return known
    listing = f"{known.source} names: {', '.join(known.names)}"
    for i, column in enumerate(spec.key):
        if not known.has(column):
            check.fail(f"key[{i}]", f"column {column!r} is not in the feed's output ({listing})")
    if not known.has(spec.event_time):
        check.fail("event_time", f"column {spec.event_time!r} is not in the feed's output ({listing})")
    kind = known.type_of(spec.event_time)
    if kind and kind not in EVENT_TIME_TYPES:
        shown = "a number" if kind == "numeric" else kind.upper()
        check.fail("event_time", f"column {spec.event_time!r} is {shown}, not a TIMESTAMP (or text waterline "
                                 "parses): convert it in the transform, e.g. timestamp_millis(...) or "
                                 "CAST(... AS TIMESTAMP)")
    return known


def check_policies(spec: FeedSpec, known: OutputColumns | None = None) -> None:
    """Compile every tier's policy (pure Python, no Spark); where the output's columns are known,
    refuse a policy naming another column, or comparing WATERLINE() with a bound whose known
    type is not a time. Raises a one-line PolicyError ``spec <file>: tiers.<tier>: ...``."""
    known = known if known is not None else output_columns(spec)
    columns = None
    if known.names is not None:
        columns = {name: known.types.get(name, "") for name in known.names}
        for name in columns:  # event_time text is parsed at ingest: policies see a TIMESTAMP
            if name.lower() == spec.event_time.lower():
                columns[name] = "timestamp"
    for tier, policy in spec.tiers.items():
        try:
            compile_policy(policy, columns=columns)
        except WaterlineError as exc:
            raise PolicyError(f"{spec.origin}: tiers.{tier}: {exc}") from None
