"""Algorithms the measurement tests send to other processes: module-level functions, so
a worker process can import them by name."""
from __future__ import annotations

import ctypes
import time

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
