"""Algorithms the measurement tests send to other processes: module-level functions, so
a worker process can import them by name."""
from __future__ import annotations

import ctypes
import time
from dataclasses import replace

import halo
from apps import blur


def blur_outputs() -> list[halo.Func]:
    return [blur.algorithm()[1]]


def crashing_outputs() -> list[halo.Func]:
    """Kills its process with a segfault, as broken generated code would."""
    ctypes.string_at(0)
    raise AssertionError("reading address 0 returned")


def hanging_outputs() -> list[halo.Func]:
    time.sleep(3600)
    raise AssertionError("an hour passed")


class Sabotaged:
    """An executor that measures through `inner`, except that the first batch of several
    jobs has its second job crash its worker and its third hang: what a broken candidate
    does to a tuning run."""

    def __init__(self, inner):
        self.inner = inner
        self.done = False

    def measure(self, jobs):
        jobs = list(jobs)
        if not self.done and len(jobs) >= 3:
            self.done = True
            jobs[1] = replace(jobs[1], build=crashing_outputs)
            jobs[2] = replace(jobs[2], build=hanging_outputs)
        return self.inner.measure(jobs)
