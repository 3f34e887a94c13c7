"""`WaterlineDueTrigger.run` over `Feed.due` (no Spark: Delta logs only), and the errors an Airflow
task raises for waterline's two error families."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from airflow.sdk.exceptions import AirflowFailException

from tests.engine.feedkit import make_spec
from waterline import DueMoments, Feed, FeedStatus
from waterline.airflow import WaterlineDueTrigger, airflow_failures
from waterline.airflow.triggers import ARMED, DUE, IDLE
from waterline.errors import CommitRaceLost, LeaseBusy, LeaseLost, WaterlineError

SECOND = 1_000_000
LOG = logging.getLogger("test")


def _events(trigger: WaterlineDueTrigger) -> list[dict]:
    async def collect():
        return [event.payload async for event in trigger.run()]

    return asyncio.run(asyncio.wait_for(collect(), timeout=60))


def _trigger(spec, **kwargs) -> WaterlineDueTrigger:
    return WaterlineDueTrigger(spec.to_dict(), base_dir=str(spec.base_dir), **kwargs)


def test_a_feed_with_nothing_ingested_goes_idle_with_the_reason(tmp_path):
    spec = make_spec(tmp_path, {"all": "TRUE"}, partitions={"daily": {"start": "2026-01-05"}})
    (event,) = _events(_trigger(spec, idle_seconds=0))
    assert event == {"status": IDLE, "reason": "nothing due; nothing ingested yet", "seq": 0}


def test_it_sleeps_to_the_moment_the_due_moment_enters_the_lead_then_fires_armed(tmp_path, monkeypatch):
    spec = make_spec(tmp_path, {"all": "TRUE"}, partitions={"daily": {"start": "2026-01-05"}},
                     release_lead_seconds=5, release_interval_seconds=60)
    now = time.time_ns() // 1000
    due_at = now + 5 * SECOND + 300_000  # enters the 5 s lead in 0.3 s; the poll is 60 s
    answers = []

    def due(feed: Feed) -> DueMoments:
        clock = time.time_ns() // 1000
        status = FeedStatus(feed=feed.name, now_us=clock, seq=1, release_w_us=clock, event_w_us=None, tiers={})
        armed = due_at if due_at - clock <= 5 * SECOND else None
        answers.append(armed)
        return DueMoments(status=status, due_us=None, armed_us=armed, upcoming_us=due_at)

    monkeypatch.setattr(Feed, "due", due)
    started = time.monotonic()
    (event,) = _events(_trigger(spec, idle_seconds=None))
    assert event == {"status": ARMED, "due_us": due_at, "seq": 1}
    assert time.monotonic() - started < 10 and answers[0] is None and answers[-1] == due_at


def test_a_release_due_now_fires_at_once(tmp_path, monkeypatch):
    spec = make_spec(tmp_path, {"all": "TRUE"}, partitions={"daily": {"start": "2026-01-05"}})
    status = FeedStatus(feed="f", now_us=0, seq=3, release_w_us=0, event_w_us=None, tiers={})
    monkeypatch.setattr(Feed, "due", lambda feed: DueMoments(status=status, due_us=-5, armed_us=None, upcoming_us=None))
    assert _events(_trigger(spec)) == [{"status": DUE, "due_us": -5, "seq": 3}]


@pytest.mark.parametrize("error", [LeaseBusy("feed f: busy, lease /w/f/_wl_lease held by h pid 1 for over 600s"),
                                   LeaseLost("feed f: lost the lease"), CommitRaceLost("feed f: release: lost")])
def test_a_transient_error_is_raised_as_its_type_so_the_tasks_retries_run(error, caplog):
    with pytest.raises(type(error)) as raised, caplog.at_level(logging.WARNING):
        with airflow_failures(LOG):
            try:
                raise RuntimeError("py4j.protocol.Py4JJavaError ... at org.apache.spark")
            except RuntimeError as cause:  # a lost race's Spark error: not in the task log
                raise error from cause
    assert type(raised.value) is type(error) and str(raised.value) == str(error)
    assert not isinstance(raised.value, AirflowFailException)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    assert raised.value is not error  # a fresh one: the engine's stack where it was raised stays behind
    assert f"{error} (transient: the task's retries apply)" in caplog.text


def test_any_other_waterline_error_fails_the_task_without_retries_in_one_line(caplog):
    with pytest.raises(AirflowFailException) as raised, caplog.at_level(logging.ERROR):
        with airflow_failures(LOG):
            raise WaterlineError("feed g: partition 2026-01-05: [CAST_INVALID_INPUT] The value 'x'\n...")
    assert str(raised.value) == "feed g: partition 2026-01-05: [CAST_INVALID_INPUT] The value 'x' ..."
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    with pytest.raises(KeyError):  # not waterline's: left to Airflow (and its retries)
        with airflow_failures(LOG):
            raise KeyError("x")
