"""Spark's errors as one line a user can act on: ``[CONDITION] message``, and a hint.

PySpark's exception text carries the JVM stack trace, the query context as JSON
and Python frames; a feed's author needs the error condition, Spark's own
message and, for the common mistakes in a transform, what to do about it.
"""

from __future__ import annotations

import re

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.logger import PySparkLogger

# Error conditions a transform or source typically meets, and what to do about them.
HINTS = {
    "CAST_INVALID_INPUT": "use try_cast(...) / try_to_timestamp(...) in the transform: bad values become NULL "
                          "and a row with a NULL key or event time is quarantined",
    "UNRESOLVED_COLUMN": "check the transform's column names against the source's columns",
    "PATH_NOT_FOUND": "check the source path template and that the partition's data exists",
    "DIVIDE_BY_ZERO": "use try_divide(...) in the transform",
    "ARITHMETIC_OVERFLOW": "use the try_* arithmetic functions or a wider type in the transform",
    "DATATYPE_MISMATCH": "cast the operands in the transform",
    "PARSE_SYNTAX_ERROR": "fix the SQL syntax of the transform",
}
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\s*$")
_MAX = 400


def condition(exc: BaseException) -> str | None:
    """The Spark error condition (e.g. ``CAST_INVALID_INPUT``), when the error has one."""
    getter = getattr(exc, "getCondition", None)
    try:
        return getter() if getter else None
    except Exception:  # a Connect error whose server lost it, a JVM gone: no condition
        return None


def spark_message(exc: BaseException) -> str | None:
    """``[CONDITION] first line of Spark's message`` for a Spark error, None for any other error."""
    if not _is_spark_error(exc):
        return None
    text = ""
    getter = getattr(exc, "getMessage", None)
    try:
        text = getter() if getter else ""
    except Exception:
        text = ""
    if not text:
        java = getattr(exc, "java_exception", None)
        try:
            text = str(java.getMessage()) if java is not None else str(exc)
        except Exception:
            text = str(exc)
    # Spark's message, not its stack trace or query context (those follow a blank line or "==")
    kept = []
    for ln in str(text).strip().splitlines():
        if not ln.strip() or ln.lstrip().startswith(("==", "at ", "JVM stacktrace")):
            break
        kept.append(ln.strip())
    line = _SQLSTATE.sub("", " ".join(kept)) or type(exc).__name__
    if len(line) > _MAX:
        line = line[:_MAX].rstrip() + " ..."
    cond = condition(exc)
    if cond and not line.startswith("["):
        line = f"[{cond}] {line}"
    return line


def first_line(exc: BaseException) -> str:
    """`spark_message` for a Spark error; otherwise the exception's type and the first line of its text."""
    spark = spark_message(exc)
    if spark is not None:
        return spark
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def hint(exc: BaseException) -> str:
    """``; hint: ...`` for a known condition (also a sub-condition such as X.WITH_SUGGESTION), else ''."""
    cond = condition(exc) or ""
    found = HINTS.get(cond) or HINTS.get(cond.split(".")[0])
    return f"; hint: {found}" if found else ""


def _is_spark_error(exc: BaseException) -> bool:
    return isinstance(exc, (PySparkException, Py4JJavaError))


def silence_pyspark_error_logs() -> None:
    """Switch off PySpark's loggers that write every SQL error it raises as a JSON line (with
    the Python stack and the JVM's message): callers that report the error themselves in one
    line (the CLI, the Airflow operators) would otherwise show it twice, the second time as a
    wall of text."""
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
