"""Trades: drop cancelled trades, type the columns, add notional and event_time.

Input (JSON lines from `waterline.demo_data`): symbol, seq, price, size, ts
(naive ISO string), status ('new' | 'correction' | 'cancel'). A cancel is a
re-delivery of a trade that must vanish, so dropping it makes the trade
disappear from the partition's output on re-processing.
"""

from __future__ import annotations

import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

OUTPUT_COLUMNS = ("symbol", "seq", "price", "size", "notional", "status", "event_time")


def process(spark: SparkSession, df: DataFrame, partition: str | None) -> DataFrame:
    """The feed's output rows for one partition: one per (symbol, seq), cancels removed."""
    price = F.col("price").cast("double")
    size = F.col("size").cast("bigint")
    return (
        # NULL status counts as live: only an explicit cancel removes a trade.
        df.where(F.coalesce(F.col("status"), F.lit("new")) != F.lit("cancel"))
        .select(
            F.col("symbol").cast("string").alias("symbol"),
            F.col("seq").cast("bigint").alias("seq"),
            price.alias("price"),
            size.alias("size"),
            F.round(price * size, 2).alias("notional"),
            F.col("status").cast("string").alias("status"),
            # Naive strings read in the session time zone (UTC, the spec's `timezone`).
            F.col("ts").cast("timestamp").alias("event_time"),
        )
    )


def read_source(spark: SparkSession, path: str) -> DataFrame:
    """Read a ticks source the way the feed spec does (JSON lines)."""
    return spark.read.format("json").load(path)


if __name__ == "__main__":
    from spark_jobs._cli import run

    sys.exit(run(__doc__.splitlines()[0], read_source, process))
