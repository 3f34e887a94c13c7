"""Filtered reads by every reader against the same reader's unfiltered read, filtered after.

A reader skips files by their Delta statistics; a bound narrower than a file's values
makes a filtered read miss rows that an unfiltered read plus the same filter returns.
For each reader (deltalake, Spark, polars, DuckDB) and each column, every distinct value
the unfiltered read holds is the operand of ``=``, the smallest of ``<=`` and the largest
of ``>=``; the filtered read's ``id``s must equal those the same engine's filter keeps
over rows it did not skip any file for (Spark: its data skipping turned off; the
others: the unfiltered rows in memory). Comparing each engine with itself keeps its own
semantics (NaN, -0.0, time zones) out of the question.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

OPS = ("=", "<=", ">=")


@dataclass
class Outcome:
    """What one reader's filtered reads of one table did."""

    reader: str
    checked: int = 0  # filters compared
    rows: int = 0  # rows the filtered reads returned, in all
    unsupported: set[str] = field(default_factory=set)  # columns the reader cannot filter on
    missed: list[str] = field(default_factory=list)  # "column op value: got ids, expected ids"


def _distinct(values: Iterable[Any]) -> list[Any]:
    seen, out = set(), []
    for v in values:
        if v is None:
            continue
        key = ("nan",) if isinstance(v, float) and math.isnan(v) else (type(v).__name__, repr(v))
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


def _operands(values: list[Any]) -> list[tuple[str, Any]]:
    ordered = [v for v in values if not (isinstance(v, float) and math.isnan(v))]
    try:
        ordered.sort()
    except TypeError:
        ordered = []
    out = [("=", v) for v in values]
    if ordered:
        out += [("<=", ordered[0]), (">=", ordered[-1])]
    return out


def _compare(outcome: Outcome, column: str, values: list[Any],
             filtered: Callable[[str, str, Any], list], expected: Callable[[str, str, Any], list]) -> None:
    for op, value in _operands(values):
        try:
            want = sorted(expected(column, op, value))
        except Exception:  # noqa: BLE001 - the engine cannot filter this type at all
            outcome.unsupported.add(column)
            continue
        got = sorted(filtered(column, op, value))
        outcome.checked += 1
        outcome.rows += len(got)
        if got != want:
            outcome.missed.append(f"{column} {op} {_short(value)}: got {got}, expected {want}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 80 else text[:60] + f"... ({len(text)} chars)"


def deltalake_outcome(path: str, columns: Iterable[str]) -> Outcome:
    import pyarrow as pa
    import pyarrow.compute as pc

    from waterline.engine.delta.storage import delta_table

    table = delta_table(path)
    full = table.to_pyarrow_table()
    outcome = Outcome("deltalake")
    compare = {"=": pc.equal, "<=": pc.less_equal, ">=": pc.greater_equal}

    def filtered(column, op, value):
        return table.to_pyarrow_table(filters=[(column, op, value)]).column("id").to_pylist()

    def expected(column, op, value):
        kept = full.filter(compare[op](full[column], pa.scalar(value, full.schema.field(column).type)))
        return kept.column("id").to_pylist()

    for column in columns:
        _compare(outcome, column, _distinct(python_values(full.column(column))), filtered, expected)
    return outcome


def python_values(column) -> list[Any]:
    """The column's values Python holds: a timestamp past year 9999 (Spark's reach ends in
    294247) has no datetime, so it is no operand of a filter; the other values still are."""
    try:
        return column.to_pylist()
    except (OverflowError, ValueError):
        values = []
        for scalar in column:
            try:
                values.append(scalar.as_py())
            except (OverflowError, ValueError):
                continue
        return values


def polars_outcome(path: str, columns: Iterable[str]) -> Outcome:
    import polars as pl

    full = pl.read_delta(path)
    outcome = Outcome("polars")

    def predicate(column, op, value):
        lit = pl.lit(value, dtype=full.schema[column])
        return {"=": pl.col(column) == lit, "<=": pl.col(column) <= lit, ">=": pl.col(column) >= lit}[op]

    def filtered(column, op, value):
        return pl.scan_delta(path).filter(predicate(column, op, value)).collect()["id"].to_list()

    def expected(column, op, value):
        return full.filter(predicate(column, op, value))["id"].to_list()

    for column in columns:
        # polars panics turning a timestamp past year 9999 into Python: Arrow's values instead
        series = full[column]
        values = python_values(series.to_arrow()) if series.dtype == pl.Datetime else series.to_list()
        _compare(outcome, column, _distinct(values), filtered, expected)
    return outcome


def duckdb_outcome(duck, path: str, columns: Iterable[str]) -> Outcome:
    # a table of DuckDB's own (an Arrow scan compares NaN as Arrow does, not as DuckDB)
    duck.execute(f"CREATE OR REPLACE TEMP TABLE full_rows AS SELECT * FROM delta_scan('{path}')")
    outcome = Outcome("duckdb")

    def filtered(column, op, value):
        return [r[0] for r in duck.execute(f'SELECT id FROM delta_scan(\'{path}\') WHERE "{column}" {op} ?',
                                           [value]).fetchall()]

    def expected(column, op, value):
        return [r[0] for r in duck.execute(f'SELECT id FROM full_rows WHERE "{column}" {op} ?', [value]).fetchall()]

    for column in columns:
        try:
            values = [r[0] for r in duck.execute(f'SELECT "{column}" FROM full_rows').fetchall()]
        except (OverflowError, ValueError):  # a timestamp past year 9999
            values = python_values(duck.execute(f'SELECT "{column}" FROM full_rows').to_arrow_table().column(0))
        _compare(outcome, column, _distinct(values), filtered, expected)
    return outcome


def spark_outcome(spark, path: str, columns: Iterable[str]) -> Outcome:
    """Spark's, by files: the files its data skipping keeps for a filter (``inputFiles``) must
    hold every file with a matching row (found in one pass with skipping off). Spark's jobs
    are slow, so its filters are ``<=`` its smallest value and ``>=`` its largest, which
    test each bound at its edge, on the types Delta skips by (not boolean, binary); values travel as SQL text
    (PySpark cannot bring a year-1 TIMESTAMP to Python)."""
    import posixpath
    from urllib.parse import unquote

    outcome = Outcome("spark")
    table = spark.read.format("delta").load(path)
    kinds = {c: table.schema[c].dataType.simpleString() for c in columns}
    skipped_by = [c for c in columns if kinds[c] not in ("boolean", "binary")]
    outcome.unsupported.update(c for c in columns if c not in skipped_by)

    def literal(column: str, text: str) -> str:
        quoted = "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return f"CAST({quoted} AS {kinds[column]})"

    ends = table.selectExpr(*(f"CAST({f}(`{c}`) AS STRING)" for c in skipped_by for f in ("min", "max"))).first()
    filters = []
    for i, column in enumerate(skipped_by):
        low, high = ends[2 * i], ends[2 * i + 1]
        if low is not None:
            filters += [f"`{column}` {op} {literal(column, text)}"
                        for op, text in (("<=", low), (">=", high))]  # "=" asks no more of a bound

    def name(uri: str) -> str:
        return posixpath.basename(unquote(uri))

    spark.conf.set("spark.databricks.delta.stats.skipping", "false")
    try:
        rows = table.selectExpr("_metadata.file_path AS file", *(f"COALESCE({f}, false) AS m{i}"
                                                                  for i, f in enumerate(filters))).collect()
    finally:
        spark.conf.unset("spark.databricks.delta.stats.skipping")
    for i, condition in enumerate(filters):
        holding = {name(r["file"]) for r in rows if r[f"m{i}"]}
        kept = {name(f) for f in spark.read.format("delta").load(path).filter(condition).inputFiles()}
        outcome.checked += 1
        outcome.rows += sum(1 for r in rows if r[f"m{i}"])
        if not holding <= kept:
            outcome.missed.append(f"{_short(condition)}: skipped files {sorted(holding - kept)} holding matches")
    return outcome


def every_reader(spark, duck, path: str, columns: Iterable[str]) -> list[Outcome]:
    """Each reader's outcome on the table at ``path``, ``columns`` filtered one by one."""
    columns = list(columns)
    return [deltalake_outcome(path, columns), polars_outcome(path, columns), duckdb_outcome(duck, path, columns),
            spark_outcome(spark, path, columns)]
