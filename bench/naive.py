"""The *naive* release, a bench-only baseline (not waterline's engine).

It recomputes every identity's governing version from the whole held table
(DESIGN.md rule 3 applied to all identities, no candidates, no file skipping:
the takeover test is inside the aggregate, so no filter is pushed to the scan)
and overwrites a separate tier table with the result. Its cost follows the size
of the held table, which is what the incremental release avoids.
"""

from __future__ import annotations

from waterline.engine.core import columns as C
from waterline.engine.tables.schedule import stored_vis_sql


def naive_release(spark, spec, tier: str, w: int, seq: int, path: str) -> int:
    from pyspark.sql import functions as F

    held = spark.read.format("delta").load(spec.held_path)
    keys = [C.PARTITION, *spec.key]
    payload = [c for c in held.columns if not C.is_system(c) and c not in spec.key]
    carried = [F.col(c) for c in payload + [C.SEQ, C.REMOVED]] + [F.expr(stored_vis_sql(tier)).alias(C.vis(tier))]
    due = (F.col(C.tau(tier)) <= w) & (F.col(C.SEQ) <= seq)
    governing = (
        held.groupBy(*keys)
        .agg(F.max_by(F.when(due, F.struct(*carried)), F.when(due, F.col(C.SEQ))).alias("_g"))
        .filter(F.col("_g").isNotNull())
        .select(*keys, "_g.*")
    )
    now_in = f"try_element_at(filter({C.vis(tier)}, i -> {w} >= i.start AND {w} < i.`end`), 1)"
    out = (
        governing.withColumn("_now", F.expr(now_in))
        .filter(~F.col(C.REMOVED) & F.col("_now").isNotNull())
        .select(*spec.key, *payload, C.PARTITION, C.SEQ,
                F.col("_now.start").alias(C.START), F.col("_now.end").alias(C.END))
        .drop(C.REMOVED)
    )
    out.write.format("delta").mode("overwrite").partitionBy(C.PARTITION).save(path)
    return spark.read.format("delta").load(path).count()
