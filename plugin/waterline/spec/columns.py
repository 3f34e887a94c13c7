"""The feed's output columns, and their types, as far as they can be known without Spark.

`waterline plan` and every spec load check the key, the event time and the policies
against them. The names are certain when the transform's select list names every column
(no ``*``), or, with no transform and no job, when the single source declares a DDL
``schema``. Anything else (``SELECT *``, a Python job, inferred source columns) is known
only when Spark reads the data: the caller says so and offers the check against the real
output (`waterline plan SPEC --partition KEY`).

A column's type is known when the schema declares it, or when its select item shows it
without Spark: a CAST, a literal, a well-known function, or a column of the one view the
transform reads when that view's source declares a schema. Unknown types are ``""``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from waterline.policy.checks import normal_type, obvious_type
from waterline.spec.model import DEFAULT_SOURCE, FeedSpec
from waterline.spec.transform_sql import UnreadTransform, parse_transform


@dataclass(frozen=True)
class OutputColumns:
    """``names`` (None when unknown), ``source``: where they come from, or why unknown, and
    ``types``: column -> Spark type as Spark's ``simpleString`` spells it (``""``: not known)."""

    names: tuple[str, ...] | None
    source: str
    types: Mapping[str, str] = field(default_factory=dict)

    def type_of(self, column: str) -> str:
        """The type of ``column`` (matched as Spark matches names: case-insensitively), or ``""``."""
        lowered = {name.lower(): kind for name, kind in self.types.items()}
        return lowered.get(column.lower(), "")

    def has(self, column: str) -> bool:
        return self.names is not None and column.lower() in {name.lower() for name in self.names}


def output_columns(spec: FeedSpec) -> OutputColumns:
    if spec.job:
        return OutputColumns(None, f"the job {spec.job} builds the output")
    views = _view_types(spec)
    if spec.transform:
        return _from_select_list(spec.transform, views)
    if len(spec.sources) == 1 and DEFAULT_SOURCE in views:
        declared = views[DEFAULT_SOURCE]
        return OutputColumns(tuple(declared), "the source's declared schema", declared)
    return OutputColumns(None, "the source columns are inferred when Spark reads them")


def _view_types(spec: FeedSpec) -> dict[str, dict[str, str]]:
    """View name -> {column: type} for each source declaring a DDL ``schema`` (the view
    ``source`` too, when it is the only source)."""
    views = {}
    for name, source in spec.sources.items():
        schema = (source.options or {}).get("schema")
        columns = ddl_columns(str(schema)) if schema else {}
        if columns:
            views[name] = columns
    if len(spec.sources) == 1 and views:
        views[DEFAULT_SOURCE] = next(iter(views.values()))
    return views


def _from_select_list(sql: str, views: Mapping[str, Mapping[str, str]]) -> OutputColumns:
    from sqlglot import exp

    try:
        tree = parse_transform(sql)
    except UnreadTransform as exc:
        return OutputColumns(None, str(exc))
    except ValueError:  # the spec loader refuses it, naming the fragment; here it only means "unknown"
        return OutputColumns(None, "the transform could not be read without Spark")
    while isinstance(tree, exp.SetOperation):  # a UNION's columns are named by its first query
        tree = tree.this
    if not isinstance(tree, exp.Select):
        return OutputColumns(None, "the transform is not a single SELECT")
    read = _view_read(tree, views)
    names, types = [], {}
    for item in tree.expressions:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            return OutputColumns(None, "the transform selects *")
        name = item.alias_or_name
        if not name:
            return OutputColumns(None, f"the transform's select item {item.sql(dialect='spark')} has no name")
        names.append(name)
        value = item.this if isinstance(item, exp.Alias) else item
        types[name] = obvious_type(value, read) or ""
    return OutputColumns(tuple(names), "the transform's select list", types)


def _view_read(tree, views: Mapping[str, Mapping[str, str]]) -> Mapping[str, str] | None:
    """The column types of the one view a SELECT reads (FROM a single view, no join), else None:
    an unqualified column then names that view's column. A CTE (which may shadow a view's
    name) or a LATERAL VIEW (which adds columns) leaves the types unknown."""
    if any(tree.args.get(key) for key in ("joins", "laterals", "with_", "with")):
        return None
    source = tree.args.get("from_") or tree.args.get("from")
    table = getattr(source, "this", None)
    if table is None or table.key != "table" or table.db:
        return None
    return views.get(table.name)


_COLUMN_OPTIONS = re.compile(r"\s+(NOT\s+NULL|COMMENT\s|DEFAULT\s|GENERATED\s).*$", re.IGNORECASE | re.DOTALL)


def ddl_columns(ddl: str) -> dict[str, str]:
    """Column name -> type of a DDL schema string (``a INT, b STRUCT<x: INT>, `c d` STRING``),
    types normalised as Spark spells them (``""`` where the text is no type sqlglot reads)."""
    columns, depth, start, parts, quote = {}, 0, 0, [], None
    for i, ch in enumerate(ddl):
        if quote is not None:  # a comma in a quoted COMMENT or a `quoted name` splits nothing
            quote = None if ch == quote else quote
        elif ch in "'`\"":
            quote = ch
        elif ch in "<(":
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
            name, rest = part[1:end], part[end + 1:]
        else:
            name, _, rest = part.partition(" ")
            if name.endswith(":") or ":" not in name:
                name = name.rstrip(":")
            else:  # `a:INT`
                name, _, head = name.partition(":")
                rest = f"{head} {rest}"
        columns[name] = _spark_type(_COLUMN_OPTIONS.sub("", rest.strip().lstrip(":").strip()))
    return columns


def _spark_type(text: str) -> str:
    from sqlglot import exp

    if not text:
        return ""
    try:
        return normal_type(exp.DataType.build(text, dialect="spark").sql(dialect="spark"))
    except Exception:  # a type sqlglot does not know: Spark will say, at ingest
        return ""
