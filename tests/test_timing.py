"""halo.timing, measured with a fake clock: which calls are timed, and for how long the
untimed warm-up runs."""
from __future__ import annotations

import pytest

import halo.timing
from halo.timing import median_time, side_by_side, time_after_idle, time_call, warm_up


class FakeClock:
    """A clock that only moves when the callable under test runs: each call takes the
    next duration from `durations` (the last one repeats)."""

    def __init__(self, durations: list[float]):
        self.now = 0.0
        self.durations = list(durations)
        self.calls = 0

    def __call__(self) -> float:
        return self.now

    def run(self) -> None:
        self.now += self.durations[min(self.calls, len(self.durations) - 1)]
        self.calls += 1


def test_warm_up_runs_for_at_least_the_time_asked():
    clock = FakeClock([0.02])
    warm_up(clock.run, 0.05, clock=clock)
    assert clock.calls == 3 and clock.now >= 0.05


def test_warm_up_calls_at_least_once():
    clock = FakeClock([1.0])
    warm_up(clock.run, 0.0, clock=clock)
    assert clock.calls == 1


def test_time_call_is_the_duration_of_one_call():
    clock = FakeClock([0.5, 0.25])
    assert time_call(clock.run, clock=clock) == 0.5
    assert time_call(clock.run, clock=clock) == 0.25


def test_median_time_is_the_median_of_the_timed_calls():
    """One warm-up call (it outlasts WARM_S), then five timed calls: the median of
    those, whatever the warm-up took."""
    clock = FakeClock([10.0, 0.3, 0.1, 0.5, 0.2, 0.4])
    assert median_time(clock.run, 5, clock=clock) == pytest.approx(0.3)
    assert clock.calls == 6


def test_time_after_idle_sleeps_warms_up_then_times_one_call(monkeypatch):
    slept = []
    monkeypatch.setattr(halo.timing.time, "sleep", slept.append)
    clock = FakeClock([0.03, 0.03, 0.007])
    assert time_after_idle(clock.run, 0.25, clock=clock) == pytest.approx(0.007)
    assert slept == [0.25] and clock.calls == 3


def test_side_by_side_takes_a_call_of_each_per_round(monkeypatch):
    """Rounds alternate the callables (a slow spell of the machine hits both); each
    gets the median of its own timed calls."""
    slept = []
    monkeypatch.setattr(halo.timing.time, "sleep", slept.append)
    clock, order = FakeClock([0.0]), []

    def timed(name: str, seconds: float):
        def run() -> None:
            order.append(name)
            clock.now += seconds if len(order) % 2 else 2 * seconds  # warm-up: 1 call
        return run
    medians = side_by_side({"a": timed("a", 0.1), "b": timed("b", 0.3)}, 3, 0.01,
                           clock=clock)
    assert order == ["a", "a", "b", "b"] * 3 and slept == [0.01] * 6
    assert medians == {"a": pytest.approx(0.2), "b": pytest.approx(0.6)}
