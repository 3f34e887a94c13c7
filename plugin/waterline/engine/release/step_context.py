"""A tier step of a release and what every part of it shares, as values without a JVM.

`TierStep` is what the planning loop (`release.planning.plan_step`) decides for one tier: from
which state to which it moves. `StepContext` is that step as its writers see it: the spec, the
tier's new state (with the step's token), the tier's log as the step read it, the held files the
candidates can be in and the partitions one ingest wrote. The Spark path (`release._apply`), the
pre-staging writers (`prestage`) and the driver's writer (`step_files`) take one `StepContext`
rather than eight to ten values alongside each call. The Spark session is not among them: the
driver's writer runs without a JVM, so the Spark writers take the session beside the context.
"""

from __future__ import annotations

from dataclasses import dataclass

from waterline.engine.core import columns as C
from waterline.engine.core.held_stats import CandidateScope
from waterline.engine.core.state import TierState
from waterline.engine.delta.table_log import TableLog
from waterline.engine.release.driver_step import StepBounds
from waterline.semantics import NEG_INF
from waterline.spec import FeedSpec


@dataclass(frozen=True)
class TierStep:
    """One tier's move from (w0, s0) to (w, seq); `low` is w0 with "never released" as NEG_INF."""

    tier: str
    w0: int | None
    s0: int
    w: int
    seq: int
    n: int  # the tier state's commit number this step commits (Delta txnVersion)
    # Another writer changed the tier's rows since its last waterline commit (a RESTORE, a
    # DELETE by hand): the tier no longer is what its state says, so every due version is a
    # candidate and rows no candidate accounts for are deleted (the Spark path's MERGE).
    reconcile: bool = False

    @property
    def low(self) -> int:
        return NEG_INF if self.w0 is None or self.reconcile else self.w0

    @property
    def since(self) -> int:
        """The ingest sequence the tier is complete through (-1: nothing is taken for granted)."""
        return -1 if self.reconcile else self.s0


@dataclass(frozen=True)
class StepContext:
    """One tier step as its writers see it."""

    spec: FeedSpec
    step: TierStep
    state: TierState  # the tier's state the step commits (its token names the step's files)
    tier_log: TableLog  # the tier's log as the step read it
    scope: CandidateScope  # the held partitions (and seq floor) the candidates can be in
    single: set[str]  # held partitions a single ingest wrote (one version an identity)

    @property
    def tier(self) -> str:
        return self.step.tier

    @property
    def token(self) -> str:
        return self.state.token

    @property
    def keys(self) -> list[str]:
        """A tier row's identity: its partition and the spec's key."""
        return [C.PARTITION, *self.spec.key]

    @property
    def bounds(self) -> StepBounds:
        """The step's numbers, as the driver's writer reads them."""
        return StepBounds(tier=self.step.tier, low=self.step.low, s0=self.step.s0, w=self.step.w)


__all__ = ["StepContext", "TierStep"]
