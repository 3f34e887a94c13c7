"""One aggregate pass over a partition's output: counts, event times, takeovers and a fingerprint.

The fingerprint is an order-independent digest of every output row (payload and
quarantine reason) plus the schema, key and event-time column. Each ingest
commit records it, so re-running a partition whose output has not changed is
recognised from this single pass: no diff against the held table, no write.

Row hashes are two 64-bit xxhash values (Spark's `xxhash64`, with and without a
salt) over the columns and a null mask: Spark's hash skips NULLs, so without the
mask `(NULL, 1)` and `(1, NULL)` would hash alike.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import Mapping, Sequence

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import MapType, StructType

from waterline.engine.core.sqltext import quoted, sql_string
from waterline.engine.spark import observed
from waterline.engine.spark.functions import FUNCTIONS
from waterline.engine.ingest.source import SOURCE_COLUMN
from waterline.engine.ingest.validate import REASON, check_duplicates
from waterline.policy import ReleasePlan, tau_sql
from waterline.semantics import NEG_INF
from waterline.spec import FeedSpec

_SALT = "waterline"
_MASK_WIDTH = 62  # null flags per BIGINT mask


@dataclass(frozen=True)
class HashForm:
    """How a held table stores its row hash: as text (tables from before the struct), and the
    payload columns `waterline apply` added to it, in order (see `row_hashes`)."""

    as_text: bool = False
    added: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    rows: int
    valid: int
    quarantined: int
    late_dropped: int
    max_event_by_source: dict[str, int]
    min_tau: dict[str, int | None]  # per tier, over valid rows (a fresh partition's versions)
    fingerprint: str


def _hashable(schema: StructType, name: str) -> str:
    # Spark refuses to hash maps; their JSON text is a stable stand-in.
    return f"to_json({quoted(name)})" if isinstance(schema[name].dataType, MapType) else quoted(name)


def _null_masks(columns: Sequence[str]) -> list[str]:
    """SQL of BIGINT masks, one bit per column set when it is NULL (62 columns per mask)."""
    masks = []
    for start in range(0, len(columns), _MASK_WIDTH):
        chunk = columns[start:start + _MASK_WIDTH]
        flags = [f"CAST(CASE WHEN {quoted(name)} IS NULL THEN {1 << i} ELSE 0 END AS BIGINT)"
                 for i, name in enumerate(chunk)]
        masks.append(" + ".join(["CAST(0 AS BIGINT)", *flags]))
    return masks


def _hashes_sql(schema: StructType, columns: Sequence[str]) -> tuple[str, str]:
    values = ", ".join([_hashable(schema, c) for c in columns] + _null_masks(columns))
    return f"xxhash64({values})", f"xxhash64({sql_string(_SALT)}, {values})"


def row_hashes(of: DataFrame | StructType, columns: Sequence[str], *,
               added: Sequence[str] = ()) -> tuple[Column, Column]:
    """Two independent 64-bit hashes of the named columns' values, NULLs included (``of``: the
    frame, or its schema when the caller knows it: asking a frame is a round trip under Connect).

    ``added``: the columns `waterline apply` added (in the order added). A row hashes as if
    the trailing ones that are NULL did not exist, so a version written before a column was
    added and a re-ingest producing NULL in it hash alike: the new column alone makes no
    row look changed, a value in it does (docs/decisions.md "New output columns on a live feed").

    Built as SQL text, one expression each: a Column built call by call costs a
    py4j round trip per call (tens of milliseconds for a few columns)."""
    schema = _schema(of)
    added = [c for c in added if c in columns]
    base = [c for c in columns if c not in added]
    default = _hashes_sql(schema, base)
    if not added:
        return F.expr(default[0]), F.expr(default[1])
    branches = [(added[k - 1], _hashes_sql(schema, [*base, *added[:k]])) for k in range(len(added), 0, -1)]

    def case(i: int) -> str:
        whens = " ".join(f"WHEN {quoted(column)} IS NOT NULL THEN {pair[i]}" for column, pair in branches)
        return f"CASE {whens} ELSE {default[i]} END"

    return F.expr(case(0)), F.expr(case(1))


def _schema(of: DataFrame | StructType) -> StructType:
    return of if isinstance(of, StructType) else of.schema


def row_hash(of: DataFrame | StructType, columns: Sequence[str], *, as_text: bool = False,
             added: Sequence[str] = ()) -> Column:
    """`_wl_hash`: the pair as `STRUCT<h1: BIGINT, h2: BIGINT>`; equal payloads, equal hashes.

    Held tables written before the struct (when it was 32 hex digits, which cost
    the 1M-row write 0.3-0.7 s more) keep their type: ``as_text=True``.
    """
    h1, h2 = row_hashes(of, columns, added=added)
    if as_text:
        return F.concat(F.lpad(F.hex(h1), 16, "0"), F.lpad(F.hex(h2), 16, "0"))
    return F.struct(h1.alias("h1"), h2.alias("h2"))


def _aggregates(spec: FeedSpec, schema: StructType, payload: Sequence[str], taus: Sequence[str]) -> list[Column]:
    """The profile as one row of aggregates: no grouping (sources are told apart by
    conditional maxima), so Spark can also compute it as observed metrics.

    ``taus``: per tier of the spec, in order, SQL of a row's takeover. SQL text, for the
    reason `row_hashes` gives."""
    valid = f"{REASON} IS NULL"
    late_drop = f"(startswith({REASON}, 'late') AND {str(spec.late == 'drop').upper()})"
    h1, h2 = _hashes_sql(schema, [*payload, REASON])
    event = f"CASE WHEN {valid} THEN unix_micros({quoted(spec.event_time)}) END"
    by_source = []
    if SOURCE_COLUMN in schema.names:  # rows say which source they came from
        by_source = [f"max(CASE WHEN {SOURCE_COLUMN} = {sql_string(name)} THEN {event} END) AS max_event_{i}"
                     for i, name in enumerate(spec.sources)]
    return [F.expr(sql) for sql in (
        "count(1) AS rows",
        f"count(CASE WHEN {valid} THEN 1 END) AS valid",
        f"count(CASE WHEN NOT {valid} AND NOT {late_drop} THEN 1 END) AS quarantined",
        f"count(CASE WHEN {late_drop} THEN 1 END) AS late_dropped",
        f"max({event}) AS max_event",
        *by_source,
        f"bit_xor({h1}) AS x",
        # The sum of h2 in two 32-bit halves: exact in BIGINT (ANSI Spark raises on overflow)
        # and cheaper than a DECIMAL(38) sum.
        f"sum(shiftrightunsigned({h2}, 32)) AS sum_hi",
        f"sum({h2} & 4294967295) AS sum_lo",
        *[f"min(CASE WHEN {valid} THEN {tau} END) AS tau_{i}" for i, tau in enumerate(taus)],
    )]


def _plan_taus(plans: Mapping[str, ReleasePlan]) -> list[str]:
    return [tau_sql(plan) for plan in plans.values()]


def profile(spec: FeedSpec, rows: DataFrame, payload: Sequence[str],
            plans: Mapping[str, ReleasePlan]) -> Profile:
    """Aggregate `rows` (the output with its `_wl_reason`) in one Spark job."""
    schema = rows.schema
    row = rows.agg(*_aggregates(spec, schema, payload, _plan_taus(plans))).collect()[0]
    return _combine(spec, schema, payload, row.asDict())


def observe_profile(spec: FeedSpec, rows: DataFrame, payload: Sequence[str], taus: Sequence[str], *,
                    schema: StructType) -> tuple[DataFrame, Observation]:
    """``rows`` observed: whatever action runs on the result (a write) computes the profile
    too; `observed_profile` reads it after that action. ``taus``: SQL of each tier's takeover,
    naming columns of ``rows`` (Spark refuses SQL functions, such as the wl_* calendars, inside
    observed metrics, so they must be computed below the observation); ``schema``: of the
    output rows the profile describes (payload, reason, source)."""
    observation = Observation(f"waterline_profile_{uuid.uuid4().hex}")
    return rows.observe(observation, *_aggregates(spec, schema, payload, taus)), observation


def observed_profile(spec: FeedSpec, rows: DataFrame, payload: Sequence[str], plans: Mapping[str, ReleasePlan],
                     observation: Observation, *, schema: StructType) -> Profile:
    """The profile an action on `observe_profile`'s frame computed, or (when Spark reported
    no metrics) the standalone profile of ``rows``."""
    metrics = observed.metrics(observation)
    if "max_event" not in metrics:
        return profile(spec, rows, payload, plans)
    return _combine(spec, schema, payload, metrics)


def profile_checking_duplicates(spec: FeedSpec, partition: str, rows: DataFrame, payload: Sequence[str],
                                plans: Mapping[str, ReleasePlan]) -> Profile:
    """The profile, observed while the duplicate-key check reads the output: one Spark job
    instead of two, for a partition with no earlier fingerprint to compare against.

    Raises the duplicate-key error like `check_duplicates`."""
    valid = rows.filter(F.col(REASON).isNull())
    # Spark refuses SQL functions (the wl_* calendar functions) inside observed metrics: two jobs then.
    if any(_calls_sql_function(tau_sql(plan)) for plan in plans.values()):
        result = profile(spec, rows, payload, plans)
        check_duplicates(spec, partition, valid)
        return result
    schema = rows.schema
    watched, observation = observe_profile(spec, rows, payload, _plan_taus(plans), schema=schema)
    check_duplicates(spec, partition, watched.filter(F.col(REASON).isNull()))
    return observed_profile(spec, rows, payload, plans, observation, schema=schema)


def _calls_sql_function(sql: str) -> bool:
    return any(name in sql.lower() for name in FUNCTIONS)


def _combine(spec: FeedSpec, schema: StructType, payload: Sequence[str], row: Mapping) -> Profile:
    """One Profile from the aggregates of `_aggregates`."""
    if SOURCE_COLUMN in schema.names:
        by_source = {name: row[f"max_event_{i}"] for i, name in enumerate(spec.sources)
                     if row[f"max_event_{i}"] is not None}
    else:  # rows do not say which source they came from: credit every source
        by_source = {} if row["max_event"] is None else {name: row["max_event"] for name in spec.sources}
    total = ((row["sum_hi"] or 0) << 32) + (row["sum_lo"] or 0)
    taus = {t: row[f"tau_{i}"] for i, t in enumerate(spec.tiers)}
    n = row["rows"]
    return Profile(
        rows=n,
        valid=row["valid"],
        quarantined=row["quarantined"],
        late_dropped=row["late_dropped"],
        max_event_by_source=by_source,
        # A NEG_INF takeover (never visible) is due at once: keep it, the sensor clamps to now.
        min_tau={t: (v if v is None or v > NEG_INF else NEG_INF) for t, v in taus.items()},
        fingerprint=f"{n}:{(row['x'] or 0) & (2**64 - 1):016x}:{total}:{_shape_digest(spec, schema, payload)}",
    )


def _shape_digest(spec: FeedSpec, schema: StructType, payload: Sequence[str]) -> str:
    """What the values mean: column types, key and event-time column."""
    shape = {
        "columns": [(c, schema[c].dataType.simpleString()) for c in payload],
        "key": list(spec.key), "event_time": spec.event_time, "timezone": spec.timezone,
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]
