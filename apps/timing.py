"""Median wall-clock time of a callable, after one warm-up call."""
from __future__ import annotations

import time
from collections.abc import Callable


def median_time(fn: Callable[[], object], repeats: int = 5) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]
