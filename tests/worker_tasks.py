"""Tasks the worker-pool tests send to worker processes: module-level functions, so a
worker can import them by name."""
from __future__ import annotations

import os
import time

from halo.autoschedule.measure import timing_turn
from halo.worker_pool import waiting


def wait_then_answer(seconds: float) -> str:
    """Waits for its turn longer than the pool's timeout, then answers at once."""
    with waiting():
        time.sleep(seconds)
    return "answered"


def work(seconds: float) -> str:
    time.sleep(seconds)
    return "worked"


def die(code: int) -> None:
    os._exit(code)


def timed_interval(seconds: float) -> tuple[float, float]:
    """When this task held the host's timing lock."""
    with timing_turn():
        start = time.monotonic()
        time.sleep(seconds)
        return start, time.monotonic()


def pid(_: object) -> int:
    return os.getpid()
