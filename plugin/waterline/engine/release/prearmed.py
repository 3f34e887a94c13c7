"""Pre-armed releases: start early, wait on the trusted clock, release at the due instant.

The release sensor (and `waterline release --wait-until-due`) start a release
run *before* its due moment, so the JVM start and the held table's first read
happen while waiting rather than after the moment. Safety does not rest on
the wait: `release` caps W at the clock it reads under the feed lease, so a
run that starts early, or a clock read a microsecond before the instant,
releases at most up to that reading and never a row that is not yet due.

While it waits, the run pre-stages the release (`waterline.engine.release.prestage`):
each tier's change at the due moment is computed and written as uncommitted
files, so at the moment the release is one Delta commit per tier
(`waterline.engine.release.prestaged`). A stage that no longer applies then (an ingest,
a hold, another writer, a clock below the moment) is discarded and the run
releases the ordinary way.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql import SparkSession

from waterline.clock import Clock, SystemClock, wait_until
from waterline.engine.core.results import ReleaseResult, combine_releases
from waterline.engine.core.races import SkippedCommit
from waterline.engine.core.runs import ReleaseRun  # a core value now; still importable from here
from waterline.engine.release.prestaged import StagedRelease, discard, release_staged
from waterline.engine.tables.status import read_feed_status
from waterline.engine.delta.storage import is_delta_table
from waterline.engine.release.release import rehearse, release, with_committed
from waterline.engine.release.prestage import stage
from waterline.engine.tables.spark_tables import read_delta
from waterline.semantics import NEG_INF
from waterline.spec import FeedSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DueRelease:
    """A pre-armed release: what it waited for and what it did."""

    due_us: int | None  # the due moment waited for (None: nothing upcoming, released at once)
    reached: bool  # the clock reached due_us before the wait ran out
    clock_at_release_us: int  # the trusted clock when the wait ended
    result: ReleaseResult
    finished_us: int = 0  # the trusted clock after the release committed
    prestaged: bool = False  # the release was the commit of files staged while waiting

    @property
    def lag_us(self) -> int | None:
        """Commit time minus the due moment, when this release reached it."""
        if self.due_us is None or not self.reached or self.result.w_us < self.due_us:
            return None
        return self.finished_us - self.due_us


def next_due_us(spec: FeedSpec, clock: Clock | None = None) -> int | None:
    """The earliest upcoming due moment over the tiers not on hold (commit metadata only)."""
    state = read_feed_status(spec, clock=clock)
    dues = [t.next_due_us for t in state.tiers.values() if not t.hold and t.next_due_us is not None]
    return min(dues) if dues else None


def prepare(spark: SparkSession, spec: FeedSpec) -> None:
    """Everything that does not depend on the clock: the JVM is up; read the held table's schema once."""
    if is_delta_table(spec.held_path):
        read_delta(spark, spec.held_path).schema  # noqa: B018  (resolves the Delta log and classes)


def _stage(spark: SparkSession, spec: FeedSpec, due_us: int, clock: Clock) -> StagedRelease | None:
    """`staging.stage` at the moment waited for, or None (then the run only rehearses and
    releases the ordinary way). A stage that fails is only a lost head start: the release
    after the wait plans again and reports what it meets."""
    try:
        return stage(spark, spec, w_us=due_us, clock=clock)
    except Exception as exc:  # noqa: BLE001
        log.warning("feed %s: release at %s not pre-staged: %s", spec.feed, due_us, exc)
        return None


def release_prestaged(spark: SparkSession, spec: FeedSpec, *, as_of_us: int, clock: Clock | None = None
                      ) -> tuple[ReleaseResult, bool]:
    """Stage the release at ``as_of_us`` and commit it at once (the release a pre-armed run
    makes at its moment, without the wait); falls back to `release`. The result, and
    whether it was the staged commit."""
    clock = clock or SystemClock()
    try:
        staged = stage(spark, spec, w_us=as_of_us, clock=clock)
    except SkippedCommit:  # the stage met a Spark without waterline's committer: the release plans again
        staged = None
    committed: list[ReleaseResult] = []
    if staged is not None:
        outcome = release_staged(spec, staged, clock=clock)
        if outcome.result is not None:
            return outcome.result, True
        committed = [outcome.partial] if outcome.partial is not None else []
    return with_committed(committed, release(spark, spec, as_of_us=as_of_us, clock=clock)), False


def _rehearse(spark: SparkSession, spec: FeedSpec, due_us: int) -> None:
    """`release.rehearse` at the moment waited for. A warm-up only: whatever it meets, the
    release after the wait meets again and reports."""
    try:
        rehearse(spark, spec, w_us=due_us)
    except Exception:  # noqa: BLE001
        pass


def release_when_due(
    spark: SparkSession,
    spec: FeedSpec,
    *,
    due_us: int | None = None,
    max_wait_us: int | None = None,
    clock: Clock | None = None,
) -> DueRelease:
    """Wait on the trusted clock until ``due_us`` (default: the next due moment), then release.

    The release asks for ``as_of_us = due_us`` when the clock reached it (W
    never goes beyond the clock's reading at commit time: `release` caps it);
    when ``max_wait_us`` runs out first it releases up to the clock, which is
    always safe. A due moment already past releases at once, to the clock.
    """
    clock = clock or SystemClock()
    prepare(spark, spec)
    if due_us is None:
        due_us = next_due_us(spec, clock=clock)
    if due_us is None:
        now = clock.now_us()
        result = release(spark, spec, clock=clock)
        return DueRelease(None, True, now, result, clock.now_us())
    staged = None
    if due_us > clock.now_us():
        staged = _stage(spark, spec, due_us, clock)
        if staged is None:
            _rehearse(spark, spec, due_us)
    reached, now = wait_until(clock, due_us, max_wait_us=max_wait_us)
    committed: list[ReleaseResult] = []  # tiers a stage committed before the rest met a conflict
    if staged is not None:
        if reached:  # one commit per tier; the stages of tiers that did not commit are discarded
            outcome = release_staged(spec, staged, clock=clock)
            if outcome.result is not None:
                return DueRelease(due_us, reached, now, outcome.result, clock.now_us(), prestaged=True)
            committed = [outcome.partial] if outcome.partial is not None else []
        else:
            discard(spec, staged)
    # W = min(due, the clock read again under the lease): a clock that reads
    # below due there (stepped back, or a wait that was fooled) releases less, never early.
    as_of = due_us if reached else None
    result = release(spark, spec, as_of_us=as_of, clock=clock)
    for _ in range(_CAPPED_ROUNDS):
        if not (reached and result.w_us < due_us):
            break
        # the cap held W back: wait for the clock again
        reached, now = wait_until(clock, due_us, max_wait_us=max_wait_us)
        result = release(spark, spec, as_of_us=due_us if reached else None, clock=clock)
    else:
        if reached and result.w_us < due_us:  # W is safe as it is; the next release goes on
            log.warning("feed %s: released to %s, not the due moment %s, after %s rounds: the clock or the "
                        "feed's waterline holds W back", spec.feed, result.w_us, due_us, _CAPPED_ROUNDS + 1)
    return DueRelease(due_us, reached, now, with_committed(committed, result), clock.now_us())


#: Releases again after the clock's cap held W below the due moment (a clock read a moment
#: early): a few, never without end (a feed's own waterline may hold W back for long).
_CAPPED_ROUNDS = 5


def next_due_after(result: ReleaseResult) -> int | None:
    """The earliest next due moment a release reported, over its tiers not on hold."""
    dues = [t.next_due_us for t in result.tiers.values() if not t.held and t.next_due_us is not None]
    return min(dues) if dues else None


def release_following(
    spark: SparkSession,
    spec: FeedSpec,
    first: DueRelease,
    *,
    lead_us: int,
    window_us: int,
    max_wait_us: int | None = None,
    clock: Clock | None = None,
) -> list[DueRelease]:
    """``first``, then the due moments that follow it within ``lead_us``, each released when due,
    for up to ``window_us`` of the clock from now.

    With due moments closer together than a run's start-up, a new run for the
    next one could not be ready in time; the run that is already up keeps
    releasing instead. Each release is a `release_when_due` (same clock cap).
    """
    clock = clock or SystemClock()
    done = [first]
    end_us = clock.now_us() + window_us
    while (upcoming := next_due_after(done[-1].result)) is not None:
        now = clock.now_us()
        if upcoming - now > lead_us or upcoming > end_us:
            break
        done.append(release_when_due(spark, spec, due_us=upcoming, max_wait_us=max_wait_us, clock=clock))
    return done


#: How long a pre-armed run keeps releasing the due moments that follow its own (each
#: within the lead of the last): long enough that a dense schedule rarely pays a new run's
#: start-up, short enough that a run ends and the orchestrator shows what it released.
FOLLOW_WINDOW_US = 600_000_000


def release_run(
    spark: SparkSession,
    spec: FeedSpec,
    *,
    due_us: int | None,
    clock: Clock | None = None,
    follow_window_us: int = FOLLOW_WINDOW_US,
) -> ReleaseRun:
    """A release run started for ``due_us`` (from a sensor or trigger; None: release now).

    A due moment still ahead is waited for on the trusted clock; one already past
    (or None) releases once, at once, to the clock (a past moment's lag is reported too). A run that waited (pre-armed)
    then also releases the moments that follow within the lead (a new run could
    not start in time for them), for up to ``follow_window_us``; a run asked for
    now ends after its one release, so a manual run never lingers.
    """
    clock = clock or SystemClock()
    max_wait = (spec.release_lead_seconds + spec.release_interval_seconds + 60) * 1_000_000
    lead_us = spec.release_lead_seconds * 1_000_000
    prearmed = due_us is not None and due_us > clock.now_us()
    if prearmed:
        first = release_when_due(spark, spec, due_us=due_us, max_wait_us=max_wait, clock=clock)
    else:
        # A moment already past when the run got here (a slow start, a late trigger) is
        # released to the clock at once; its lag is still reported, the run was for it.
        asked = due_us if due_us is not None and due_us > NEG_INF else None
        now = clock.now_us()
        first = DueRelease(asked, True, now, release(spark, spec, clock=clock), clock.now_us())
    done = [first]
    if prearmed and lead_us > 0:
        done = release_following(spark, spec, first, lead_us=lead_us,
                                 window_us=max(follow_window_us, 3 * lead_us), max_wait_us=max_wait, clock=clock)
    lags = tuple((step.due_us, step.lag_us) for step in done if step.lag_us is not None)
    return ReleaseRun(combine_releases([step.result for step in done]), prearmed=prearmed, lags=lags)

