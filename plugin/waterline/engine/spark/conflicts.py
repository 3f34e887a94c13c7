"""Is this exception a Delta commit conflict (another commit won the race)?

Delta's optimistic concurrency raises a conflict when a concurrent commit
touched what a transaction read: `ConcurrentAppendException` and its siblings,
`MetadataChangedException`, `ProtocolChangedException`. They are recognised
by type (delta-spark's Python classes, installed for classic Spark by
``delta.exceptions`` and for Spark Connect by ``delta.connect``) or, when the
conversion did not run, by Spark error condition, which both the py4j and the
Connect client carry. A message that merely mentions "concurrent" is not one:
only Delta's own classes and conditions count.
"""

from __future__ import annotations

from delta.exceptions.base import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    ConcurrentWriteException,
    DeltaConcurrentModificationException,
    MetadataChangedException,
    ProtocolChangedException,
)
from pyspark.errors import PySparkException

CONFLICT_TYPES = (
    DeltaConcurrentModificationException, ConcurrentWriteException, MetadataChangedException,
    ProtocolChangedException, ConcurrentAppendException, ConcurrentDeleteReadException,
    ConcurrentDeleteDeleteException, ConcurrentTransactionException,
)
#: Error conditions of Delta's commit conflicts (a sub-condition follows a dot).
CONFLICT_PREFIX = "DELTA_CONCURRENT_"
CONFLICT_CONDITIONS = frozenset({"DELTA_METADATA_CHANGED", "DELTA_PROTOCOL_CHANGED"})


def conflict_condition(condition: str | None) -> bool:
    """True for a Delta conflict's error condition (``DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT`` ...)."""
    if not condition:
        return False
    head = condition.split(".", 1)[0]
    return head.startswith(CONFLICT_PREFIX) or head in CONFLICT_CONDITIONS


def _condition(exc: BaseException) -> str | None:
    if not isinstance(exc, PySparkException):
        return None
    try:
        return exc.getCondition()
    except Exception:  # a classic error whose JVM is gone: no condition to read
        return None


def is_commit_conflict(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it was raised from) is a Delta commit conflict."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, CONFLICT_TYPES) or conflict_condition(_condition(current)):
            return True
        current = current.__cause__ or current.__context__
    return False
