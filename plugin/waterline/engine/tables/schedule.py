"""Compile the feed's tier policies against the output schema and tag rows with them.

Each version gets, per tier, its visibility intervals, its takeover instant and
its last finite boundary, computed in Spark from the compiled plan, once, at
ingest. Releases then only compare those numbers with W.
"""

from __future__ import annotations

from typing import Mapping

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType
from pyspark.sql import functions as F

from waterline.engine.core import columns as C
from waterline.engine.spark.functions import register_functions
from waterline.errors import WaterlineError
from waterline.policy import ReleasePlan, compile_policy, single_interval_sql, vis_sql
from waterline.policy.render import VIS_TYPE
from waterline.semantics import NEG_INF, POS_INF
from waterline.spec import FeedSpec

_EMPTY_VIS = f"CAST(array() AS {VIS_TYPE})"



def spark_typer(spark: SparkSession, df: DataFrame):
    """A `typer` for the policy compiler: the Spark type of an expression over df's columns."""

    def typer(expr: str) -> str:
        try:
            return df.limit(0).selectExpr(expr).schema.fields[0].dataType.simpleString()
        except Exception as exc:
            raise WaterlineError(f"cannot evaluate `{expr}`: {str(exc).strip().splitlines()[0]}") from exc

    return typer


def compile_tiers(spark: SparkSession, spec: FeedSpec, df: DataFrame, schema: StructType | None = None,
                  tiers=None, policies: Mapping[str, str] | None = None) -> dict[str, ReleasePlan]:
    """Compile every tier's policy (or only ``tiers``'; ``policies``: these instead, by name,
    e.g. those of an earlier applied spec version) against df's schema (``schema``, when the
    caller knows it); errors name the tier."""
    policies = spec.tiers if policies is None else policies
    register_functions(spark, *policies.values())  # adds the calendars the policies name
    columns = {f.name: f.dataType.simpleString() for f in (schema or df.schema).fields if not C.is_system(f.name)}
    for name, kind in columns.items():  # event_time text is parsed at ingest: policies see a TIMESTAMP
        if name.lower() == spec.event_time.lower() and kind in ("string", "timestamp_ntz"):
            columns[name] = "timestamp"
    typer = spark_typer(spark, df)
    return {
        tier: compile_policy(policy, tier=tier, columns=columns, typer=typer)
        for tier, policy in policies.items() if tiers is None or tier in tiers
    }


def check_tiers_scheduled(spec: FeedSpec, held_columns, tiers=None) -> None:
    """Every tier of the spec (or of ``tiers``) must have its schedule columns in held.

    Held versions get their schedule at ingest; a tier added to the spec later
    has none for the versions already held until `waterline apply` computes it
    (re-ingesting would not: unchanged rows get no new version). Refuse rather
    than publish a tier that silently misses those rows.
    """
    missing = [t for t in (spec.tiers if tiers is None else tiers) if C.tau(t) not in set(held_columns)]
    if missing:
        raise WaterlineError(
            f"feed {spec.feed}: tier(s) {', '.join(missing)} added after data was ingested: the held versions "
            "have no schedule for them yet; run `waterline apply SPEC` to schedule them and build the tier(s)"
        )


def _takeover_and_last(non_empty: str, first_start: str, last_start: str, last_end: str) -> tuple[str, str]:
    """SQL of the takeover (earliest start, NEG_INF if never visible) and the last finite
    boundary (the last interval's end if finite, else its start if finite, else NEG_INF)."""
    never = f"CAST({NEG_INF} AS BIGINT)"
    tau = f"CASE WHEN {non_empty} THEN {first_start} ELSE {never} END"
    last = (f"CASE WHEN NOT ({non_empty}) THEN {never} WHEN {last_end} < {POS_INF} THEN {last_end} "
            f"WHEN {last_start} > {NEG_INF} THEN {last_start} ELSE {never} END")
    return tau, last


def _array_takeover_and_last(vis_col: str) -> tuple[str, str]:
    # Intervals are sorted and disjoint: no lambda needed (Spark would interpret it per row).
    first, final = f"try_element_at({vis_col}, 1)", f"try_element_at({vis_col}, -1)"
    return _takeover_and_last(f"size({vis_col}) > 0", f"{first}.start", f"{final}.start", f"{final}.`end`")


def takeover_and_last_sql(vis_col: str) -> tuple[str, str]:
    """SQL for the takeover and the greatest finite boundary of a visibility array."""
    return _array_takeover_and_last(vis_col)


def last_boundary_sql(vis_col: str) -> str:
    """SQL for the greatest finite boundary of a visibility array (NEG_INF if none)."""
    return _array_takeover_and_last(vis_col)[1]


def schedule_columns(plans: Mapping[str, ReleasePlan]) -> tuple[dict[str, Column], dict[str, Column]]:
    """`_wl_vis__T`, `_wl_tau__T`, `_wl_last__T` for every tier T, as two projections: the
    first over the rows' own columns; the second (empty unless a tier has several branches)
    over the first, whose visibility array it reads.

    A one-branch tier's visibility is at most one interval, fully told by its
    takeover and last boundary, so its array is stored as NULL (see
    :func:`stored_vis_sql`): writing the array cost a 1M-row ingest ~0.5 s.
    """
    vis: dict[str, Column] = {}
    bounds: dict[str, Column] = {}
    later: dict[str, Column] = {}
    for tier, plan in plans.items():
        single = single_interval_sql(plan)
        if single is None:
            vis[C.vis(tier)] = F.expr(vis_sql(plan))
            tau, last = _array_takeover_and_last(C.vis(tier))
            later[C.tau(tier)], later[C.last(tier)] = F.expr(tau), F.expr(last)
        else:
            non_empty, start, end = single
            vis[C.vis(tier)] = F.expr(f"CASE WHEN {non_empty} THEN NULL ELSE {_EMPTY_VIS} END")
            tau, last = _takeover_and_last(non_empty, start, start, end)
            bounds[C.tau(tier)], bounds[C.last(tier)] = F.expr(tau), F.expr(last)
    return {**vis, **bounds}, later


def stored_end_sql(tier: str) -> str:
    """SQL for the end of a held version's single interval when `_wl_vis__T` is NULL:
    `last` is that end when it is finite, else the start (= tau), so last = tau means +inf."""
    tau, last = C.tau(tier), C.last(tier)
    return f"CASE WHEN {last} = {tau} THEN CAST({POS_INF} AS BIGINT) ELSE {last} END"


def stored_vis_sql(tier: str) -> str:
    """SQL for a held version's visibility array for ``tier``, however it was stored.

    NULL stands for the single interval [tau, :func:`stored_end_sql`). Empty
    visibility is always stored as an empty array, never NULL.
    """
    single = f"array(named_struct('start', {C.tau(tier)}, 'end', {stored_end_sql(tier)}))"
    return f"coalesce({C.vis(tier)}, {single})"


def removal_schedule(df: DataFrame, tiers) -> DataFrame:
    """Removals are invisible everywhere and take over at once (DESIGN rule 2)."""
    empty = F.expr(_EMPTY_VIS)
    for tier in tiers:
        df = (
            df.withColumn(C.vis(tier), empty)
            .withColumn(C.tau(tier), F.lit(NEG_INF).cast("bigint"))
            .withColumn(C.last(tier), F.lit(NEG_INF).cast("bigint"))
        )
    return df
