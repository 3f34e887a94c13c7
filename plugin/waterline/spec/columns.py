"""The feed's output columns as far as they can be known without Spark.

`waterline plan` checks that policies name only columns the feed produces. The
names are certain when the transform's select list names every column (no
``*``), or, with no transform and no job, when the single source declares a DDL
``schema``. Anything else (``SELECT *``, a Python job, inferred source columns)
is known only when Spark reads the data: the caller says so and offers the
check against the real output (`waterline plan SPEC --partition KEY`).
"""

from __future__ import annotations

from dataclasses import dataclass

from waterline.spec.model import FeedSpec


@dataclass(frozen=True)
class OutputColumns:
    """``names`` (None when unknown) and ``source``: where they come from, or why unknown."""

    names: tuple[str, ...] | None
    source: str


def output_columns(spec: FeedSpec) -> OutputColumns:
    if spec.job:
        return OutputColumns(None, f"the job {spec.job} builds the output")
    if spec.transform:
        return _from_select_list(spec.transform)
    if len(spec.sources) == 1:
        source = next(iter(spec.sources.values()))
        schema = (source.options or {}).get("schema")
        if schema:
            names = _ddl_names(str(schema))
            if names:
                return OutputColumns(tuple(names), "the source's declared schema")
    return OutputColumns(None, "the source columns are inferred when Spark reads them")


def _from_select_list(sql: str) -> OutputColumns:
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql.replace("{partition}", "p"), read="spark")
    except Exception:  # Spark reports the transform's own syntax errors, with their position, at ingest
        return OutputColumns(None, "the transform could not be read without Spark")
    if not isinstance(tree, exp.Select):
        return OutputColumns(None, "the transform is not a single SELECT")
    names = []
    for item in tree.expressions:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            return OutputColumns(None, "the transform selects *")
        name = item.alias_or_name
        if not name:
            return OutputColumns(None, f"the transform's select item {item.sql(dialect='spark')} has no name")
        names.append(name)
    return OutputColumns(tuple(names), "the transform's select list")


def _ddl_names(ddl: str) -> list[str]:
    """Column names of a DDL schema string (``a INT, b STRUCT<x: INT, y: STRING>, `c d` STRING``)."""
    names, depth, start = [], 0, 0
    parts = []
    for i, ch in enumerate(ddl):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(ddl[start:i])
            start = i + 1
    parts.append(ddl[start:])
    for part in parts:
        part = part.strip()
        if not part:
            continue
        if part.startswith("`"):
            end = part.find("`", 1)
            names.append(part[1:end])
        else:
            names.append(part.split()[0].rstrip(":"))
    return names
