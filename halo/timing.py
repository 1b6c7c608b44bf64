"""Timing compiled code by wall clock, with what measuring on a small shared machine
taught:

- Warm up before timing (`warm_up`). Right after an idle spell, a 2 ms kernel ran 3x
  slower in half its calls while the cores woke up; after 20 ms of work every call ran
  at full speed. So every timed call follows `WARM_S` seconds of untimed calls.
- Pause before timing one thing right after another (`time_after_idle`). OpenBLAS's
  worker threads busy-wait for work for about 0.1 s after a call, which on a 2-core
  machine took the cores from whatever ran next (3x slower). `IDLE_S` lets them sleep.

`median_time(fn)` is what an app reports; the benchmarks interleave the variants of a
case (`side_by_side`), one `time_after_idle` call of each per round, so that a machine's
load drifting during a case weighs on all of them alike. (Timed one after another
instead, the same blur schedule measured 14.6 and 30.7 ms within an hour.) Every
function takes the clock as a keyword (seconds, monotonic), so tests can pass a fake one.
"""
from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]

WARM_S = 0.05   # untimed calls before a timed one (the cores wake up in about 20 ms)
IDLE_S = 0.25   # a pause that outlasts another library's spinning worker threads


def warm_up(fn: Callable[[], object], seconds: float = WARM_S, *,
            clock: Clock = time.perf_counter) -> None:
    """Call `fn` for `seconds` (at least once), untimed."""
    start = clock()
    fn()
    while clock() - start < seconds:
        fn()


def time_call(fn: Callable[[], object], *, clock: Clock = time.perf_counter) -> float:
    """Seconds one call of `fn` takes."""
    start = clock()
    fn()
    return clock() - start


def median_time(fn: Callable[[], object], repeats: int = 5, *,
                clock: Clock = time.perf_counter) -> float:
    """Median seconds of `repeats` calls of `fn` (the upper one of an even count), after
    `warm_up`."""
    warm_up(fn, clock=clock)
    return _upper_median([time_call(fn, clock=clock) for _ in range(repeats)])


def time_after_idle(fn: Callable[[], object], idle_s: float = IDLE_S, *,
                    clock: Clock = time.perf_counter) -> float:
    """Seconds of one call of `fn` made after a pause of `idle_s` (threads of whatever
    ran before go idle) and `warm_up` (the cores wake up again)."""
    time.sleep(idle_s)
    warm_up(fn, clock=clock)
    return time_call(fn, clock=clock)


def side_by_side(calls: dict[str, Callable[[], object]], rounds: int,
                 idle_s: float = IDLE_S, *, clock: Clock = time.perf_counter
                 ) -> dict[str, float]:
    """Median seconds of each of `calls` over `rounds` rounds, each round one
    `time_after_idle` call of every one in turn (the upper median of an even count)."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, fn in calls.items():
            times[name].append(time_after_idle(fn, idle_s, clock=clock))
    return {name: _upper_median(ts) for name, ts in times.items()}


def _upper_median(times: list[float]) -> float:
    return sorted(times)[len(times) // 2]
