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
from typing import TYPE_CHECKING, Mapping, Sequence

from waterline.engine.source import SOURCE_COLUMN
from waterline.engine.validate import REASON
from waterline.semantics import NEG_INF

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from waterline.policy import ReleasePlan
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


def _hashable(df: "DataFrame", name: str) -> "Column":
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType

    # Spark refuses to hash maps; their JSON text is a stable stand-in.
    return F.to_json(F.col(name)) if isinstance(df.schema[name].dataType, MapType) else F.col(name)


def _null_masks(columns: Sequence[str]) -> list["Column"]:
    from pyspark.sql import functions as F

    masks = []
    for start in range(0, len(columns), _MASK_WIDTH):
        chunk = columns[start:start + _MASK_WIDTH]
        mask = F.lit(0).cast("bigint")
        for i, name in enumerate(chunk):
            mask = mask + F.when(F.col(name).isNull(), F.lit(1 << i)).otherwise(F.lit(0)).cast("bigint")
        masks.append(mask)
    return masks


def row_hashes(df: "DataFrame", columns: Sequence[str]) -> tuple["Column", "Column"]:
    """Two independent 64-bit hashes of the named columns' values, NULLs included."""
    from pyspark.sql import functions as F

    values = [_hashable(df, c) for c in columns] + _null_masks(columns)
    return F.xxhash64(*values), F.xxhash64(F.lit(_SALT), *values)


def row_hash(df: "DataFrame", columns: Sequence[str]) -> "Column":
    """`_wl_hash`: the pair as 32 hex digits; equal payloads, equal hashes."""
    from pyspark.sql import functions as F

    h1, h2 = row_hashes(df, columns)
    return F.concat(F.lpad(F.hex(h1), 16, "0"), F.lpad(F.hex(h2), 16, "0"))


def profile(spec: "FeedSpec", rows: "DataFrame", payload: Sequence[str],
            plans: Mapping[str, "ReleasePlan"]) -> Profile:
    """Aggregate `rows` (the output with its `_wl_reason`) in one Spark job."""
    from pyspark.sql import functions as F

    valid = F.col(REASON).isNull()
    late_drop = F.col(REASON).startswith("late") & F.lit(spec.late == "drop")
    h1, h2 = row_hashes(rows, [*payload, REASON])
    source = F.col(SOURCE_COLUMN) if SOURCE_COLUMN in rows.columns else F.lit("*")
    tiers = list(plans)
    grouped = rows.groupBy(source.alias("s")).agg(
        F.count(F.lit(1)).alias("rows"),
        F.count(F.when(valid, 1)).alias("valid"),
        F.count(F.when(~valid & ~late_drop, 1)).alias("quarantined"),
        F.count(F.when(late_drop, 1)).alias("late_dropped"),
        F.max(F.when(valid, F.expr(f"unix_micros(`{spec.event_time}`)"))).alias("max_event"),
        F.bit_xor(h1).alias("x"),
        F.sum(h2.cast("decimal(38,0)")).alias("sum"),
        *[F.min(F.when(valid, F.expr(plans[t].tau_sql()))).alias(f"tau_{i}") for i, t in enumerate(tiers)],
    ).collect()
    by_source = {r["s"]: r["max_event"] for r in grouped if r["max_event"] is not None}
    if "*" in by_source:  # rows do not say which source they came from: credit every source
        by_source = {name: by_source["*"] for name in spec.sources}
    xor, total = 0, 0
    for r in grouped:
        xor ^= r["x"] or 0
        total += int(r["sum"] or 0)
    taus = {t: min((r[f"tau_{i}"] for r in grouped if r[f"tau_{i}"] is not None), default=None)
            for i, t in enumerate(tiers)}
    n = sum(r["rows"] for r in grouped)
    return Profile(
        rows=n,
        valid=sum(r["valid"] for r in grouped),
        quarantined=sum(r["quarantined"] for r in grouped),
        late_dropped=sum(r["late_dropped"] for r in grouped),
        max_event_by_source=by_source,
        # A NEG_INF takeover (never visible) is due at once: keep it, the sensor clamps to now.
        min_tau={t: (v if v is None or v > NEG_INF else NEG_INF) for t, v in taus.items()},
        fingerprint=f"{n}:{xor & (2**64 - 1):016x}:{total}:{_shape_digest(spec, rows, payload)}",
    )


def _shape_digest(spec: "FeedSpec", rows: "DataFrame", payload: Sequence[str]) -> str:
    """What the values mean: column types, key and event-time column."""
    shape = {
        "columns": [(c, rows.schema[c].dataType.simpleString()) for c in payload],
        "key": list(spec.key), "event_time": spec.event_time, "timezone": spec.timezone,
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]
