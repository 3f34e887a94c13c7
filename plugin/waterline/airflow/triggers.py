"""The deferrable wait for a feed's next due moment, run by Airflow's triggerer.

`WaterlineDueTrigger` polls the feed's commit state with the ``deltalake``
package (`waterline.engine.state.read_feed_state`): no Spark, no JVM, no worker
slot held. It fires when a release would change a tier now, or, in clock mode,
when the next due moment is within the feed's ``release_lead_seconds`` (the
resumed task starts Spark and waits on the trusted clock for the moment, so
firing early cannot release early). With nothing due before ``idle_seconds``
it fires ``idle`` and the task skips: a continuous release DAG then starts its
next run, and the UI shows the feed is being watched.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

#: Event statuses: release now (``due``), start Spark and wait for ``due_us`` (``armed``),
#: nothing due within the trigger's time (``idle``).
DUE, ARMED, IDLE = "due", "armed", "idle"


class WaterlineDueTrigger(BaseTrigger):
    """Fires when feed ``spec`` (a `FeedSpec.to_dict()`) has a release due or about to be due.

    :param spec: the feed spec as a plain dict (serialisable; the triggerer rebuilds it).
    :param base_dir: what relative paths in ``spec`` resolve against.
    :param poll_seconds: how often to re-read the commit state (default: the spec's
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
        from waterline.engine.due import armed_due_us, due_now_us, nothing_due_reason, upcoming_due_us
        from waterline.engine.state import read_feed_state
        from waterline.spec import spec_from_dict

        feed = spec_from_dict(self.spec, base_dir=self.base_dir)
        poll = float(self.poll_seconds or feed.release_interval_seconds)
        lead_us = int(feed.release_lead_seconds) * 1_000_000
        started = time.monotonic()
        while True:
            # Delta log reads are blocking I/O: keep them off the triggerer's event loop.
            state = await asyncio.to_thread(read_feed_state, feed)
            due = due_now_us(state)
            if due is not None:
                self.log.info("feed %s: a release is due (seq %s)", feed.feed, state.seq)
                yield TriggerEvent({"status": DUE, "due_us": due, "seq": state.seq})
                return
            armed = armed_due_us(feed, state)
            if armed is not None:
                self.log.info("feed %s: due moment in %.1f s; resuming to wait for it with Spark up",
                              feed.feed, (armed - state.now_us) / 1e6)
                yield TriggerEvent({"status": ARMED, "due_us": armed, "seq": state.seq})
                return
            if self.idle_seconds is not None and time.monotonic() - started >= self.idle_seconds:
                yield TriggerEvent({"status": IDLE, "reason": nothing_due_reason(state), "seq": state.seq})
                return
            sleep = poll
            upcoming = upcoming_due_us(state)
            if upcoming is not None and feed.waterline.mode == "clock":
                # Wake when the due moment enters the lead (or arrives, without a lead).
                sleep = min(poll, max(0.05, (upcoming - lead_us - state.now_us) / 1e6))
            self.log.debug("feed %s: %s; next look in %.1f s", feed.feed, nothing_due_reason(state), sleep)
            await asyncio.sleep(sleep)
