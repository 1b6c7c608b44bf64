"""Algorithms the autoschedule tests share, among them those the measurement tests send
to other processes (module-level functions, so a worker process can import them by
name)."""
from __future__ import annotations

import ctypes
import time
from dataclasses import replace

import numpy as np

import halo
from apps import blur


def blur_outputs() -> list[halo.Func]:
    return [blur.algorithm()[1]]


def two_outputs_with_a_param():
    """(inp, b, c, image, pipeline): two outputs sharing a Func that scales by a Param
    (default 2.0), and a 40 x 50 input for their 39 x 49 outputs."""
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    k = halo.Param(halo.float32, "k", 2.0)
    a, b, c = halo.Func("a"), halo.Func("b"), halo.Func("c")
    a[y, x] = inp[y, x] * k
    b[y, x] = a[y, x] + a[y, x + 1]
    c[y, x] = a[y, x] - a[y + 1, x]
    image = np.random.default_rng(6).random((40, 50), dtype=np.float32)
    return inp, b, c, image, halo.Pipeline([b, c])


def crashing_outputs() -> list[halo.Func]:
    """Kills its process with a segfault, as broken generated code would."""
    ctypes.string_at(0)
    raise AssertionError("reading address 0 returned")


def hanging_outputs() -> list[halo.Func]:
    time.sleep(3600)
    raise AssertionError("an hour passed")


class Sabotaged:
    """An executor that measures through `inner`, except that in the first batch of
    several jobs, the first job crashes its worker and the second hangs (the first two:
    they start at once): what broken candidates do to a tuning run."""

    def __init__(self, inner):
        self.inner = inner
        self.done = False

    def measure(self, jobs):
        jobs = list(jobs)
        if not self.done and len(jobs) >= 3:
            self.done = True
            jobs[0] = replace(jobs[0], build=crashing_outputs)
            jobs[1] = replace(jobs[1], build=hanging_outputs)
        return self.inner.measure(jobs)
