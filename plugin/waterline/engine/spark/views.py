"""Temporary views: how a DataFrame reaches SQL (MERGE) in classic Spark and over Spark Connect."""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from typing import Iterator

from pyspark.sql import DataFrame


@contextmanager
def temp_view(df: DataFrame, prefix: str = "_wl_src") -> Iterator[str]:
    """Register ``df`` as a uniquely named temporary view for the block; yields its name.

    SQL over a view is the one way to MERGE a DataFrame into a Delta table that works in
    classic Spark and over Spark Connect alike (the DeltaTable Python API is py4j)."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    df.createOrReplaceTempView(name)
    try:
        yield name
    finally:
        df.sparkSession.catalog.dropTempView(name)
