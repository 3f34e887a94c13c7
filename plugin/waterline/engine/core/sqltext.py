"""Quoting values and table locations into Spark SQL text."""

from __future__ import annotations


def sql_string(value: str) -> str:
    """A Spark SQL string literal for ``value``."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def delta_path(path: str) -> str:
    """``delta.`path```: a Delta table named by its location in SQL (MERGE, OPTIMIZE, ALTER)."""
    return "delta.`" + path.replace("`", "``") + "`"


def quoted(name: str) -> str:
    """A column name as a Spark SQL identifier (backquoted, so any name is one column)."""
    return "`" + name.replace("`", "``") + "`"
