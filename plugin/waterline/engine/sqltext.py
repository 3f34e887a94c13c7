"""Quoting values into Spark SQL text."""

from __future__ import annotations


def sql_string(value: str) -> str:
    """A Spark SQL string literal for ``value``."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
