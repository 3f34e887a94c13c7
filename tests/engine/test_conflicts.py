"""Delta commit conflicts are recognised by type and error condition, over classic and
Connect, and only they (plus skipped commits) are retried, by the one retry helper."""

from __future__ import annotations

import pytest
from delta.exceptions.base import ConcurrentAppendException, MetadataChangedException, ProtocolChangedException
from pyspark.errors import AnalysisException, PySparkException
from pyspark.errors.exceptions.connect import SparkConnectGrpcException

from waterline.engine.core.races import SkippedCommit, retry_lost_races
from waterline.engine.spark.conflicts import conflict_condition, is_commit_conflict
from waterline.errors import CommitRaceLost, TransientError


@pytest.mark.parametrize("condition, conflict", [
    ("DELTA_CONCURRENT_APPEND", True),
    ("DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT", True),
    ("DELTA_CONCURRENT_DELETE_READ", True),
    ("DELTA_CONCURRENT_TRANSACTION", True),
    ("DELTA_CONCURRENT_WRITE", True),
    ("DELTA_METADATA_CHANGED", True),
    ("DELTA_PROTOCOL_CHANGED", True),
    ("DELTA_TABLE_NOT_FOUND", False),
    ("CAST_INVALID_INPUT", False),
    ("", False),
    (None, False),
])
def test_conditions(condition, conflict):
    assert conflict_condition(condition) is conflict


@pytest.mark.parametrize("exc", [
    ConcurrentAppendException("files were added by a concurrent update"),
    MetadataChangedException("the metadata was changed"),
    ProtocolChangedException("the protocol was changed"),
])
def test_delta_exception_types_are_conflicts(exc):
    assert is_commit_conflict(exc)


def test_classic_and_connect_errors_carrying_a_conflict_condition_are_conflicts():
    class Captured(AnalysisException):
        """A classic error as py4j captures it: the condition comes from the JVM's exception."""

        def getCondition(self) -> str:
            return "DELTA_CONCURRENT_APPEND.WITHOUT_HINT"

    classic = Captured(message="[DELTA_CONCURRENT_APPEND.WITHOUT_HINT] files were added to the table")
    connect = SparkConnectGrpcException(message="[DELTA_METADATA_CHANGED] metadata changed",
                                        errorClass="DELTA_METADATA_CHANGED", messageParameters={})
    assert is_commit_conflict(classic)
    assert is_commit_conflict(connect)


def test_a_conflict_raised_from_is_found_through_the_cause():
    try:
        try:
            raise ConcurrentAppendException("concurrent append")
        except ConcurrentAppendException as inner:
            raise RuntimeError("merge failed") from inner
    except RuntimeError as outer:
        assert is_commit_conflict(outer)


def test_other_errors_are_not_conflicts_even_when_they_say_concurrent():
    assert not is_commit_conflict(RuntimeError("concurrent modification of the dict"))
    assert not is_commit_conflict(PySparkException(message="[CAST_INVALID_INPUT] concurrent", errorClass=None))
    assert not is_commit_conflict(SparkConnectGrpcException(message="boom", errorClass="INTERNAL_ERROR",
                                                            messageParameters={}))


def test_retry_reruns_lost_races_then_gives_up_as_transient():
    calls, checks = [], []

    def attempt():
        calls.append(1)
        if len(calls) < 3:
            raise ConcurrentAppendException("lost") if len(calls) == 1 else SkippedCommit("skipped")
        return "landed"

    assert retry_lost_races(attempt, is_race=is_commit_conflict, before_retry=lambda: checks.append(1),
                            what="release of f") == "landed"
    assert len(calls) == 3 and len(checks) == 2

    def always_lose():
        raise MetadataChangedException("lost again")

    with pytest.raises(CommitRaceLost, match="release of f lost 3 commit races") as info:
        retry_lost_races(always_lose, is_race=is_commit_conflict, before_retry=lambda: None, what="release of f")
    assert isinstance(info.value, TransientError)


def test_retry_does_not_retry_other_errors():
    calls = []

    def broken():
        calls.append(1)
        raise ValueError("a bug, not a race")

    with pytest.raises(ValueError):
        retry_lost_races(broken, is_race=is_commit_conflict, before_retry=lambda: None, what="ingest of f")
    assert calls == [1]
