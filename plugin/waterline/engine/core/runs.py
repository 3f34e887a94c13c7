"""What a run of several steps returns: `ReleaseRun` (an orchestrated release, possibly waiting
for its due moment) and `StreamRun` (a stream's micro-batches). Plain values, so that
``waterline`` exports them without loading the engine rooms that produce them (pyspark)."""

from __future__ import annotations

from dataclasses import dataclass, field

from waterline.engine.core.results import ReleaseResult, StreamBatchResult


@dataclass(frozen=True)
class ReleaseRun:
    """What one orchestrated release run did: the combined result, and per due moment reached,
    how long after it the release committed."""

    result: ReleaseResult
    prearmed: bool  # the run started before its due moment and waited for it
    lags: tuple[tuple[int, int], ...] = ()  # (due_us, commit minus due in µs), in order


@dataclass
class StreamRun:
    """What one `run` did: every micro-batch, the releases it made, the offsets it reached."""

    feed: str
    batches: list[StreamBatchResult] = field(default_factory=list)
    releases: list[ReleaseResult] = field(default_factory=list)
    offsets: dict[str, dict] = field(default_factory=dict)  # source -> {topic: {partition: next offset}}

    @property
    def versions_written(self) -> int:
        return sum(b.versions_written for b in self.batches)

    def summary(self) -> str:
        applied = [b for b in self.batches if not b.skipped]
        return (f"{self.feed}: {len(applied)} batches ({len(self.batches) - len(applied)} replays skipped), "
                f"{sum(b.records for b in applied)} records, {self.versions_written} versions, "
                f"{len(self.releases)} releases")
