"""Shared `python -m spark_jobs.<feed> SOURCE_PATH` entry point."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Callable

from pyspark.sql import DataFrame, SparkSession

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def run(
    description: str,
    read: Callable[[SparkSession, str], DataFrame],
    process: Callable[[SparkSession, DataFrame, str | None], DataFrame],
    argv: list[str] | None = None,
) -> int:
    """Read SOURCE_PATH, apply ``process`` and print every processed row."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("source_path", help="a partition's source folder or file")
    parser.add_argument("--partition", help="partition key (default: the YYYY-MM-DD folder in the path)")
    args = parser.parse_args(argv)
    partition = args.partition or _partition_from_path(args.source_path)

    from waterline.engine.spark.session import get_session

    spark = get_session()
    result = process(spark, read(spark, args.source_path), partition)
    rows = result.count()
    result.show(n=max(rows, 1), truncate=False)
    print(f"{rows} rows (partition {partition or '-'})", file=sys.stderr)
    return 0


def _partition_from_path(path: str) -> str | None:
    for part in reversed(Path(path).parts):
        if _DAY.match(part):
            return part
    return None
