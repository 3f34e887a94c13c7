"""Spark commits that carry waterline's state (the readers are `engine.delta.table_log`).

`commit_state` attaches a state to the Delta commit Spark makes inside the
block (``commitInfo.userMetadata``) and, with an app id, the Delta transaction
(``txnAppId``/``txnVersion``), so a replay is skipped by Delta. `record_state`
commits a state with no row change, as the table property ``waterline.state``,
which also keeps it readable after log cleanup.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from pyspark.sql import SparkSession

from waterline.engine.core.sqltext import delta_path, sql_string
from waterline.engine.core.state import HeldState, TierState
from waterline.engine.delta.commit import state_text
from waterline.engine.delta.table_log import PROPERTY

_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
_TXN_APP = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"

State = HeldState | TierState


@contextmanager
def temporary_conf(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """Set a Spark SQL conf for the block, then restore what was there."""
    previous = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)


@contextmanager
def cleared_conf(spark: SparkSession, key: str) -> Iterator[None]:
    """Unset a Spark SQL conf for the block, then restore what was there."""
    previous = spark.conf.get(key, None)
    if previous is None:
        yield
        return
    spark.conf.unset(key)
    try:
        yield
    finally:
        spark.conf.set(key, previous)


@contextmanager
def commit_state(spark: SparkSession, state: State, *, app: str | None = None,
                 version: int | None = None) -> Iterator[None]:
    """Attach ``state`` to the Delta commit made inside the block, and with ``app`` the
    transaction id (app, version): Delta then skips the commit if the table already has
    that app at ``version`` or later, so a replay is a no-op (see `engine.tables.feed_tables.committed_version`)."""
    with temporary_conf(spark, _USER_METADATA, state_text(state, tagged=True)):
        if app is None:
            yield
            return
        with temporary_conf(spark, _TXN_APP, app), temporary_conf(spark, _TXN_VERSION, str(version)):
            yield


def record_state(spark: SparkSession, path: str, state: State) -> None:
    """Commit ``state`` to the table with no row change.

    Delta skips the commit of an empty append and of a MERGE that changes
    nothing, so a waterline that moved without data is recorded with a
    property change instead, which always commits. The property also keeps the
    state readable from the table's metadata after old log files are cleaned up.
    """
    with commit_state(spark, state):  # Delta records no txn for ALTER TABLE: n alone orders it
        spark.sql(f"ALTER TABLE {delta_path(path)} SET TBLPROPERTIES ('{PROPERTY}' = {sql_string(state_text(state))})")
