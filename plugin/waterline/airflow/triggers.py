"""The deferrable wait for a feed's next due moment, run by Airflow's triggerer.

`WaterlineDueTrigger` asks the feed's `waterline.Feed.due` (the Delta logs read
with the ``deltalake`` package: no Spark, no JVM, no pyspark import, no worker
slot held), the same question the Dagster release sensor asks. It fires when a
release would change a tier now, or, in clock mode, when the next due moment
is within the feed's ``release_lead_seconds`` (the resumed task starts Spark
and waits on the trusted clock for the moment, so firing early cannot release
early). With nothing due before ``idle_seconds`` it fires ``idle`` and the task
skips: a continuous release DAG then starts its next run, and the UI shows the
feed is being watched. A spec file changed but not applied (docs/operations.md)
releases nothing: the trigger keeps looking (the apply may come any moment) and,
idle, the task skips with ``spec not applied: ...``, the Dagster sensor's line. The triggerer needs read access to the warehouse only:
it uses no connection.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from waterline.errors import SpecNotApplied
from waterline.feed import Feed
from waterline.spec import spec_from_dict

#: Event statuses: release now (``due``), start Spark and wait for ``due_us`` (``armed``),
#: nothing due within the trigger's time (``idle``).
DUE, ARMED, IDLE = "due", "armed", "idle"


class WaterlineDueTrigger(BaseTrigger):
    """Fires when feed ``spec`` (a `FeedSpec.to_dict()`) has a release due or about to be due.

    :param spec: the feed spec as a plain dict (serialisable; the triggerer rebuilds it).
    :param base_dir: what relative paths in ``spec`` resolve against.
    :param poll_seconds: how often to look again (default: the spec's
        ``release_interval_seconds``); an upcoming due moment is slept to exactly.
    :param idle_seconds: fire ``idle`` after this long with nothing due (None: never).
    """

    def __init__(
        self,
        spec: dict[str, Any],
        *,
        base_dir: str | None = None,
        poll_seconds: float | None = None,
        idle_seconds: float | None = 3600.0,
    ) -> None:
        super().__init__()
        self.spec = spec
        self.base_dir = base_dir
        self.poll_seconds = poll_seconds
        self.idle_seconds = idle_seconds

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {"spec": self.spec, "base_dir": self.base_dir, "poll_seconds": self.poll_seconds,
             "idle_seconds": self.idle_seconds},
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        feed = Feed(spec_from_dict(self.spec, base_dir=self.base_dir))  # no Spark: due() reads Delta logs only
        spec = feed.spec
        poll = float(self.poll_seconds or spec.release_interval_seconds)
        lead_us = int(spec.release_lead_seconds) * 1_000_000
        started = time.monotonic()
        while True:
            # Delta log reads are blocking I/O: keep them off the triggerer's event loop.
            try:
                due = await asyncio.to_thread(feed.due)
            except SpecNotApplied as exc:  # no release until the change is applied
                reason = f"spec not applied: {exc}"
                if self.idle_seconds is not None and time.monotonic() - started >= self.idle_seconds:
                    yield TriggerEvent({"status": IDLE, "reason": reason, "seq": None})
                    return
                self.log.info("feed %s: %s", feed.name, reason)
                await asyncio.sleep(poll)
                continue
            seq, now_us = due.status.seq, due.status.now_us
            if due.due_us is not None:
                self.log.info("feed %s: a release is due (seq %s)", feed.name, seq)
                yield TriggerEvent({"status": DUE, "due_us": due.due_us, "seq": seq})
                return
            if due.armed_us is not None:
                self.log.info("feed %s: due moment in %.1f s; resuming to wait for it with Spark up",
                              feed.name, (due.armed_us - now_us) / 1e6)
                yield TriggerEvent({"status": ARMED, "due_us": due.armed_us, "seq": seq})
                return
            if self.idle_seconds is not None and time.monotonic() - started >= self.idle_seconds:
                yield TriggerEvent({"status": IDLE, "reason": due.reason, "seq": seq})
                return
            sleep = poll
            if due.upcoming_us is not None and spec.waterline.mode == "clock":
                # Wake when the due moment enters the lead (or arrives, without a lead).
                sleep = min(poll, max(0.05, (due.upcoming_us - lead_us - now_us) / 1e6))
            self.log.debug("feed %s: %s; next look in %.1f s", feed.name, due.reason, sleep)
            await asyncio.sleep(sleep)


__all__ = ["ARMED", "DUE", "IDLE", "WaterlineDueTrigger"]
