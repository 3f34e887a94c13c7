"""Compile the feed's tier policies against the output schema and tag rows with them.

Each version gets, per tier, its visibility intervals, its takeover instant and
its last finite boundary, computed in Spark from the compiled plan, once, at
ingest. Releases then only compare those numbers with W.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from waterline.engine import columns as C
from waterline.errors import WaterlineError
from waterline.semantics import NEG_INF, POS_INF

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from waterline.policy import ReleasePlan
    from waterline.spec import FeedSpec


def spark_typer(spark: "SparkSession", df: "DataFrame"):
    """A `typer` for the policy compiler: the Spark type of an expression over df's columns."""

    def typer(expr: str) -> str:
        try:
            return df.limit(0).selectExpr(expr).schema.fields[0].dataType.simpleString()
        except Exception as exc:
            raise WaterlineError(f"cannot evaluate `{expr}`: {str(exc).strip().splitlines()[0]}") from exc

    return typer


def compile_tiers(spark: "SparkSession", spec: "FeedSpec", df: "DataFrame") -> dict[str, "ReleasePlan"]:
    """Compile every tier's policy against df's schema; errors name the tier."""
    from waterline.engine.functions import register_functions
    from waterline.policy import compile_policy

    register_functions(spark)
    columns = {f.name: f.dataType.simpleString() for f in df.schema.fields if not C.is_system(f.name)}
    typer = spark_typer(spark, df)
    return {
        tier: compile_policy(policy, tier=tier, columns=columns, typer=typer)
        for tier, policy in spec.tiers.items()
    }


def last_boundary_sql(vis_col: str) -> str:
    """SQL for the greatest finite boundary of a visibility array (NEG_INF if none).

    Intervals are sorted and disjoint, so it is the last interval's end if finite,
    else that interval's start if finite (no lambda: Spark would interpret it per row).
    """
    last = f"try_element_at({vis_col}, -1)"
    return (
        f"CASE WHEN size({vis_col}) = 0 THEN CAST({NEG_INF} AS BIGINT) "
        f"WHEN {last}.`end` < {POS_INF} THEN {last}.`end` "
        f"WHEN {last}.start > {NEG_INF} THEN {last}.start ELSE CAST({NEG_INF} AS BIGINT) END"
    )


def with_schedule(df: "DataFrame", plans: Mapping[str, "ReleasePlan"]) -> "DataFrame":
    """Add `_wl_vis__T`, `_wl_tau__T`, `_wl_last__T` for every tier T."""
    from pyspark.sql import functions as F

    for tier, plan in plans.items():
        df = df.withColumn(C.vis(tier), F.expr(plan.vis_sql()))
    for tier in plans:
        df = df.withColumn(
            C.tau(tier),
            F.expr(f"CASE WHEN size({C.vis(tier)}) = 0 THEN CAST({NEG_INF} AS BIGINT) "
                   f"ELSE try_element_at({C.vis(tier)}, 1).start END"),
        ).withColumn(C.last(tier), F.expr(last_boundary_sql(C.vis(tier))))
    return df


def removal_schedule(df: "DataFrame", tiers) -> "DataFrame":
    """Removals are invisible everywhere and take over at once (DESIGN rule 2)."""
    from pyspark.sql import functions as F

    empty = F.expr("CAST(array() AS ARRAY<STRUCT<start: BIGINT, `end`: BIGINT>>)")
    for tier in tiers:
        df = (
            df.withColumn(C.vis(tier), empty)
            .withColumn(C.tau(tier), F.lit(NEG_INF).cast("bigint"))
            .withColumn(C.last(tier), F.lit(NEG_INF).cast("bigint"))
        )
    return df
