"""The release sensor's decision as a pure function of (state, cursor, last run status). No Spark."""

from __future__ import annotations

from dagster import RunRequest, SkipReason

from waterline.dagster.sensors import decide, due_key
from waterline.engine.core.status import FeedStatus, TierStatus
from waterline.semantics import NEG_INF
from waterline.spec import spec_from_dict

SPEC = spec_from_dict({
    "feed": "f", "warehouse": "/tmp/wl-never-written", "source": {"format": "json", "path": "/tmp/x/{partition}"},
    "partitions": {"static": ["a"]}, "key": ["id"], "event_time": "t",
    "tiers": {"rt": "TRUE", "emb": "t <= WATERLINE()"},
})
NOW = 1_800_000_000_000_000


def state(seq=1, rt_due=True, emb_due=False, emb_next=NOW + 60_000_000, hold=False) -> FeedStatus:
    return FeedStatus(feed="f", now_us=NOW, seq=seq, release_w_us=NOW, event_w_us=None, tiers={
        "rt": TierStatus("rt", None, 0, False, None, 2, NEG_INF if rt_due else None, rt_due),
        "emb": TierStatus("emb", None, 0, hold, None, 2, emb_next, emb_due),
    })


def test_nothing_due_names_the_next_due_moment():
    decision = decide(SPEC, state(rt_due=False), {})
    assert isinstance(decision, SkipReason)
    assert decision.skip_message == "nothing due; next due 2027-01-15T08:01:00Z (tier emb)"
    held = decide(SPEC, state(rt_due=False, emb_next=None, hold=True), {})
    assert held.skip_message == "nothing due; no pending versions; on hold: emb"


def test_one_run_per_due_moment():
    s = state()
    first = decide(SPEC, s, {})
    assert isinstance(first, RunRequest) and first.run_key == f"f:1:{NEG_INF}" == due_key(SPEC, s)
    cursor = {"run_key": first.run_key, "due_key": first.run_key}
    assert isinstance(decide(SPEC, s, cursor, None), SkipReason)
    assert isinstance(decide(SPEC, s, cursor, "SUCCESS"), SkipReason)


def test_no_new_run_while_the_last_is_in_flight():
    # rt committed, emb not yet: the due moment looks new, but the release is still running
    cursor = {"run_key": f"f:1:{NEG_INF}", "due_key": f"f:1:{NEG_INF}"}
    partly = state(rt_due=False, emb_due=True, emb_next=NOW - 1)
    for status in ("QUEUED", "STARTING", "STARTED"):
        decision = decide(SPEC, partly, cursor, status)
        assert isinstance(decision, SkipReason) and "waiting for it to land" in decision.skip_message
    after = decide(SPEC, partly, cursor, "SUCCESS")
    assert isinstance(after, RunRequest) and after.run_key == f"f:1:{NOW - 1}"


def test_failed_run_is_retried_once_per_failure():
    key = f"f:1:{NEG_INF}"
    retry = decide(SPEC, state(), {"run_key": key, "due_key": key}, "FAILURE")
    assert isinstance(retry, RunRequest) and retry.run_key == f"{key}:retry1"
    again = decide(SPEC, state(), {"run_key": f"{key}:retry1", "due_key": key, "retries": 1}, "FAILURE")
    assert again.run_key == f"{key}:retry2"


def test_new_ingest_is_a_new_due_moment():
    cursor = {"run_key": f"f:1:{NEG_INF}", "due_key": f"f:1:{NEG_INF}"}
    decision = decide(SPEC, state(seq=2), cursor, "SUCCESS")
    assert isinstance(decision, RunRequest) and decision.run_key == f"f:2:{NEG_INF}"


def test_a_due_moment_within_the_lead_time_is_requested_ahead_once():
    from waterline.dagster.sensors import DUE_TAG, armed_key

    soon = NOW + 10_000_000  # inside the default 45 s lead
    ahead = state(rt_due=False, emb_next=soon)
    first = decide(SPEC, ahead, {})
    assert isinstance(first, RunRequest) and first.run_key == f"f:1:{soon}" == armed_key(SPEC, ahead)
    assert first.tags[DUE_TAG] == str(soon)
    cursor = {"run_key": first.run_key, "due_key": first.run_key}
    # the pre-armed run is waiting: nothing more; at the moment itself the key is the same one
    assert isinstance(decide(SPEC, ahead, cursor, "STARTED"), SkipReason)
    at_due = FeedStatus(feed="f", now_us=soon, seq=1, release_w_us=soon, event_w_us=None, tiers={
        "rt": TierStatus("rt", None, 0, False, None, 0, None, False),
        "emb": TierStatus("emb", None, 0, False, None, 2, soon, True),
    })
    assert due_key(SPEC, at_due) == first.run_key
    assert isinstance(decide(SPEC, at_due, cursor, "SUCCESS"), SkipReason)


def test_no_pre_arming_beyond_the_lead_time_in_event_mode_or_with_lead_zero():
    from dataclasses import replace

    from waterline.dagster.sensors import armed_key
    from waterline.spec.model import WaterlineSpec

    lead_us = SPEC.release_lead_seconds * 1_000_000
    assert armed_key(SPEC, state(rt_due=False, emb_next=NOW + lead_us + 1)) is None
    assert armed_key(SPEC, state(rt_due=False, emb_next=NOW + lead_us)) is not None
    assert armed_key(replace(SPEC, release_lead_seconds=0), state(rt_due=False, emb_next=NOW + 1)) is None
    event = replace(SPEC, waterline=WaterlineSpec(mode="event"))
    assert armed_key(event, state(rt_due=False, emb_next=NOW + 1)) is None


def test_the_sensor_decides_from_the_feeds_due_answer():
    from waterline.engine.core.due import DueMoments

    for s, cursor in ((state(), {}), (state(rt_due=False), {}), (state(rt_due=False, emb_next=NOW + 10_000_000), {}),
                      (state(), {"run_key": f"f:1:{NEG_INF}", "due_key": f"f:1:{NEG_INF}"})):
        answer = DueMoments.of(SPEC, s)  # what Feed.due() gives for this state
        assert decide(SPEC, answer, cursor, "FAILURE") == decide(SPEC, s, cursor, "FAILURE")
    request = decide(SPEC, DueMoments.of(SPEC, state()), {})
    assert request.run_key == DueMoments.of(SPEC, state()).run_key and request.tags["waterline/due"] == "now"
