"""Economic releases: type the columns and keep the latest revision per (indicator, period).

Input (CSV from `waterline.demo_data`, all strings): indicator, period, value,
unit, release_date (YYYY-MM-DD), revision. A re-delivered partition may list
several revisions of one figure; consumers get only the latest. Columns added
by the feed's transform (such as ``embargo_until``) pass through untouched.
"""

from __future__ import annotations

import sys

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F


def process(spark: SparkSession, df: DataFrame, partition: str | None) -> DataFrame:
    """One row per (indicator, period): the highest revision, with typed columns."""
    typed = (
        df.withColumn("value", F.col("value").cast("double"))
        .withColumn("revision", F.col("revision").cast("int"))
        .withColumn("release_date", F.to_date(F.col("release_date")))
    )
    newest_first = Window.partitionBy("indicator", "period").orderBy(F.col("revision").desc_nulls_last())
    return (
        typed.withColumn("_revision_rank", F.row_number().over(newest_first))
        .where(F.col("_revision_rank") == 1)
        .drop("_revision_rank")
    )


def read_source(spark: SparkSession, path: str) -> DataFrame:
    """Read an indicators source the way the feed spec does (CSV with a header, strings)."""
    return spark.read.format("csv").option("header", "true").load(path)


if __name__ == "__main__":
    from spark_jobs._cli import run

    sys.exit(run(__doc__.splitlines()[0], read_source, process))
