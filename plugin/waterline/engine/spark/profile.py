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
from dataclasses import dataclass
from typing import Mapping, Sequence

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import MapType

from waterline.engine.spark.functions import FUNCTIONS
from waterline.engine.spark.source import SOURCE_COLUMN
from waterline.engine.spark.validate import REASON, check_duplicates
from waterline.policy import ReleasePlan
from waterline.semantics import NEG_INF
from waterline.spec import FeedSpec

_SALT = "waterline"
_MASK_WIDTH = 62  # null flags per BIGINT mask


@dataclass(frozen=True)
class Profile:
    rows: int
    valid: int
    quarantined: int
    late_dropped: int
    max_event_by_source: dict[str, int]
    min_tau: dict[str, int | None]  # per tier, over valid rows (a fresh partition's versions)
    fingerprint: str


def _hashable(df: DataFrame, name: str) -> Column:
    # Spark refuses to hash maps; their JSON text is a stable stand-in.
    return F.to_json(F.col(name)) if isinstance(df.schema[name].dataType, MapType) else F.col(name)


def _null_masks(columns: Sequence[str]) -> list[Column]:
    masks = []
    for start in range(0, len(columns), _MASK_WIDTH):
        chunk = columns[start:start + _MASK_WIDTH]
        mask = F.lit(0).cast("bigint")
        for i, name in enumerate(chunk):
            mask = mask + F.when(F.col(name).isNull(), F.lit(1 << i)).otherwise(F.lit(0)).cast("bigint")
        masks.append(mask)
    return masks


def row_hashes(df: DataFrame, columns: Sequence[str]) -> tuple[Column, Column]:
    """Two independent 64-bit hashes of the named columns' values, NULLs included."""
    values = [_hashable(df, c) for c in columns] + _null_masks(columns)
    return F.xxhash64(*values), F.xxhash64(F.lit(_SALT), *values)


def row_hash(df: DataFrame, columns: Sequence[str], *, as_text: bool = False) -> Column:
    """`_wl_hash`: the pair as `STRUCT<h1: BIGINT, h2: BIGINT>`; equal payloads, equal hashes.

    Held tables written before the struct (when it was 32 hex digits, which cost
    the 1M-row write 0.3-0.7 s more) keep their type: ``as_text=True``.
    """
    h1, h2 = row_hashes(df, columns)
    if as_text:
        return F.concat(F.lpad(F.hex(h1), 16, "0"), F.lpad(F.hex(h2), 16, "0"))
    return F.struct(h1.alias("h1"), h2.alias("h2"))


def _aggregates(spec: FeedSpec, rows: DataFrame, payload: Sequence[str],
                plans: Mapping[str, ReleasePlan]) -> list[Column]:
    valid = F.col(REASON).isNull()
    late_drop = F.col(REASON).startswith("late") & F.lit(spec.late == "drop")
    h1, h2 = row_hashes(rows, [*payload, REASON])
    return [
        F.count(F.lit(1)).alias("rows"),
        F.count(F.when(valid, 1)).alias("valid"),
        F.count(F.when(~valid & ~late_drop, 1)).alias("quarantined"),
        F.count(F.when(late_drop, 1)).alias("late_dropped"),
        F.max(F.when(valid, F.expr(f"unix_micros(`{spec.event_time}`)"))).alias("max_event"),
        F.bit_xor(h1).alias("x"),
        # The sum of h2 in two 32-bit halves: exact in BIGINT (ANSI Spark raises on overflow)
        # and cheaper than a DECIMAL(38) sum.
        F.sum(F.shiftrightunsigned(h2, 32)).alias("sum_hi"),
        F.sum(h2.bitwiseAND(F.lit(0xFFFFFFFF))).alias("sum_lo"),
        *[F.min(F.when(valid, F.expr(plan.tau_sql()))).alias(f"tau_{i}") for i, plan in enumerate(plans.values())],
    ]


def profile(spec: FeedSpec, rows: DataFrame, payload: Sequence[str],
            plans: Mapping[str, ReleasePlan]) -> Profile:
    """Aggregate `rows` (the output with its `_wl_reason`) in one Spark job."""
    source = F.col(SOURCE_COLUMN) if SOURCE_COLUMN in rows.columns else F.lit("*")
    grouped = rows.groupBy(source.alias("s")).agg(*_aggregates(spec, rows, payload, plans)).collect()
    return _combine(spec, rows, payload, plans, [r.asDict() for r in grouped])


def profile_checking_duplicates(spec: FeedSpec, partition: str, rows: DataFrame, payload: Sequence[str],
                                plans: Mapping[str, ReleasePlan]) -> Profile:
    """The profile, observed while the duplicate-key check reads the output: one Spark job
    instead of two, for a partition with no earlier fingerprint to compare against.

    Raises the duplicate-key error like `check_duplicates`."""
    valid = rows.filter(F.col(REASON).isNull())
    # Per-source maxima need a grouping, and Spark refuses SQL functions (the wl_* calendar
    # functions) inside observed metrics: two jobs then.
    if SOURCE_COLUMN in rows.columns or any(_calls_sql_function(plan.tau_sql()) for plan in plans.values()):
        result = profile(spec, rows, payload, plans)
        check_duplicates(spec, partition, valid)
        return result
    observation = Observation("waterline_profile")
    observed = rows.observe(observation, *_aggregates(spec, rows, payload, plans))
    check_duplicates(spec, partition, observed.filter(F.col(REASON).isNull()))
    try:
        metrics = observation.get
    except Exception:  # classic Spark reports no metrics for an empty output (it raises)
        return profile(spec, rows, payload, plans)
    if "max_event" not in metrics:  # ... and Spark Connect returns an empty dict
        return profile(spec, rows, payload, plans)
    return _combine(spec, rows, payload, plans, [dict(metrics, s="*")])


def _calls_sql_function(sql: str) -> bool:
    return any(name in sql.lower() for name in FUNCTIONS)


def _combine(spec, rows, payload, plans, groups: list[dict]) -> Profile:
    """One Profile from the aggregates of each source's rows (`s`: the source, or "*")."""
    by_source = {r["s"]: r["max_event"] for r in groups if r["max_event"] is not None}
    if "*" in by_source:  # rows do not say which source they came from: credit every source
        by_source = {name: by_source["*"] for name in spec.sources}
    xor, total = 0, 0
    for r in groups:
        xor ^= r["x"] or 0
        total += ((r["sum_hi"] or 0) << 32) + (r["sum_lo"] or 0)
    taus = {t: min((r[f"tau_{i}"] for r in groups if r[f"tau_{i}"] is not None), default=None)
            for i, t in enumerate(plans)}
    n = sum(r["rows"] for r in groups)
    return Profile(
        rows=n,
        valid=sum(r["valid"] for r in groups),
        quarantined=sum(r["quarantined"] for r in groups),
        late_dropped=sum(r["late_dropped"] for r in groups),
        max_event_by_source=by_source,
        # A NEG_INF takeover (never visible) is due at once: keep it, the sensor clamps to now.
        min_tau={t: (v if v is None or v > NEG_INF else NEG_INF) for t, v in taus.items()},
        fingerprint=f"{n}:{xor & (2**64 - 1):016x}:{total}:{_shape_digest(spec, rows, payload)}",
    )


def _shape_digest(spec: FeedSpec, rows: DataFrame, payload: Sequence[str]) -> str:
    """What the values mean: column types, key and event-time column."""
    shape = {
        "columns": [(c, rows.schema[c].dataType.simpleString()) for c in payload],
        "key": list(spec.key), "event_time": spec.event_time, "timezone": spec.timezone,
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]
