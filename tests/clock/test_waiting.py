"""wait_until re-reads the clock: a reading a microsecond early never ends the wait. No Spark."""

from __future__ import annotations

from waterline.clock import wait_until

DUE = 1_800_000_000_000_000


class ScriptedClock:
    """Returns the scripted readings in order, then the last one forever."""

    def __init__(self, *readings: int) -> None:
        self.readings = list(readings)
        self.reads = 0

    def now_us(self) -> int:
        value = self.readings[min(self.reads, len(self.readings) - 1)]
        self.reads += 1
        return value


def test_a_read_just_before_the_instant_keeps_waiting():
    clock = ScriptedClock(DUE - 10_000_000, DUE - 1, DUE - 1, DUE + 3)
    sleeps: list[float] = []
    reached, now = wait_until(clock, DUE, sleep=sleeps.append)
    assert reached and now == DUE + 3
    assert clock.reads == 4 and len(sleeps) == 3
    assert all(0 <= s <= 0.05 for s in sleeps)  # small steps, each re-reading the clock


def test_the_instant_itself_is_due():
    reached, now = wait_until(ScriptedClock(DUE - 1, DUE), DUE, sleep=lambda s: None)
    assert reached and now == DUE


def test_max_wait_runs_out_without_claiming_the_instant():
    clock = ScriptedClock(DUE - 5_000_000, DUE - 4_000_000, DUE - 2_000_000, DUE - 1)
    reached, now = wait_until(clock, DUE, max_wait_us=2_500_000, sleep=lambda s: None)
    assert not reached and now < DUE
