"""BatchContext: what every step of one micro-batch shares, carried as one value.

A micro-batch of one source is read, checked, planned, written and committed by several
steps (`stream.batch`, `stream.batch_write`, `stream.small_batch`); each needs the session,
the spec, which batch of which source it is, held's log and state as the batch found them
under the lease, and the batch's clock reading. They travel together here instead of as a
dozen parameters alongside each call.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession

from waterline.engine.core.state import HeldState
from waterline.engine.delta.table_log import TableLog
from waterline.engine.tables.lease import Lease
from waterline.spec import FeedSpec


@dataclass(frozen=True)
class BatchContext:
    """One micro-batch of one source, as its steps see it (read under the feed's lease)."""

    spark: SparkSession
    spec: FeedSpec
    source: str
    batch_id: int
    held_log: TableLog  # held's log as the batch found it (replaced once a first batch creates held)
    state: HeldState  # held's state as the batch found it
    now_us: int  # the batch's one reading of the trusted clock
    lease: Lease
    bound: int | None  # at most how many records the batch holds (None: the checkpoint did not tell)

    @property
    def seq(self) -> int:
        """The held sequence number the batch's versions carry."""
        return self.state.seq + 1


__all__ = ["BatchContext"]
