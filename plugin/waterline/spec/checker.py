"""Validation of raw spec values: every failure is one `SpecError` line naming the key path.

``spec <file>: <key.path>: <what is wrong>``; `waterline.spec.loader` and
`waterline.spec.sections` report through one `SpecChecker`.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Iterable, Mapping

from waterline.errors import SpecError
from waterline.clock import parse_duration

SOURCE_KEYS = ("format", "path", "options")
KAFKA_SOURCE_KEYS = ("format", "bootstrap", "topic", "topics", "value", "starting_offsets", "options")
WATERLINE_KEYS = ("mode", "lateness", "idle_after")
MAINTENANCE_KEYS = ("time_travel", "every")
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_NAME_LENGTH = 40
# Output columns are used unquoted in generated SQL; `_wl_` is reserved for system columns.
COLUMN_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
JOB_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")


class SpecChecker:
    """Raises SpecErrors prefixed with the spec's origin and the key path."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def fail(self, path: str, reason: str) -> None:
        raise SpecError(f"{self.origin}: {path}: {reason}")

    def mapping(self, value: Any, path: str, what: str = "a mapping") -> Mapping:
        if not isinstance(value, Mapping):
            self.fail(path, f"expected {what}, got {describe(value)}")
        for key in value:
            if not isinstance(key, str):
                self.fail(path, f"keys must be strings, got {key!r}")
        return value

    def only_keys(self, value: Mapping, allowed: Iterable[str], path: str) -> None:
        allowed = tuple(allowed)
        for key in value:
            if key not in allowed:
                where = f"{path}.{key}" if path else key
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f" (valid keys: {', '.join(allowed)})"
                self.fail(where, f"unknown key{hint}")

    def text(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(path, f"expected a non-empty string, got {describe(value)}")
        return value

    def name(self, value: Any, path: str, what: str) -> str:
        value = self.text(value, path)
        if not NAME_PATTERN.match(value):
            self.fail(path, f"{what} names must match [a-z][a-z0-9_]* (used in table paths and column names), got {value!r}")
        if len(value) > MAX_NAME_LENGTH:
            self.fail(path, f"{what} names are at most {MAX_NAME_LENGTH} characters, got {len(value)}")
        return value

    def column(self, value: Any, path: str) -> str:
        value = self.text(value, path)
        if not COLUMN_PATTERN.match(value):
            self.fail(path, f"column names must match [A-Za-z_][A-Za-z0-9_]*, got {value!r}")
        if value.lower().startswith("_wl_"):
            self.fail(path, f"column names starting with _wl_ are reserved for waterline's system columns, got {value!r}")
        return value

    def choice(self, value: Any, allowed: tuple[str, ...], path: str) -> str:
        if value not in allowed:
            self.fail(path, f"expected one of {', '.join(allowed)}, got {value!r}")
        return value

    def duration(self, value: Any, path: str):
        try:
            return parse_duration(value)
        except ValueError as exc:
            self.fail(path, str(exc))


def describe(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"{type(value).__name__} {value!r}"
