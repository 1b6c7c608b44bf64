"""Lowering, compiling and the reference from several threads at once. Each raised the
interpreter's recursion limit on entry and put back what it found on exit, so a thread
that finished first dropped the limit under one still deep in a long pipeline: a raw
RecursionError every time, and once "Fatal Python error: Cannot recover from stack
overflow". Deep work now runs on a thread with a stack of its own, and the limit is raised
while any of it runs (`halo.ir.deep_stack`)."""
from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest

import halo
from halo.ir.deep_stack import run_deep
from halo.lru_cache import LRUCache

from .child_process import assert_survives_in_a_child


def _chain(stages: int, tag: str) -> tuple[halo.ImageParam, halo.Func]:
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, f"{tag}_inp")
    f = halo.boundary.repeat_edge(inp)
    for k in range(stages):
        g = halo.Func(f"{tag}{k}")
        g[y, x] = (f[y, x - 1] + f[y, x] + f[y + 1, x]) * 0.25
        g.compute_root()
        f = g
    return inp, f


def _run() -> None:
    limit = sys.getrecursionlimit()
    errors: list[str] = []
    deep_done = threading.Event()

    def deep() -> None:
        try:
            _chain(30, "deep")[1].lower()  # nests past Python's default of 1000 frames
        except Exception as e:
            errors.append(repr(e))
        deep_done.set()

    def shallow(tag: str) -> None:
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        rounds = 0
        while not deep_done.is_set() or rounds < 2:
            try:
                inp, f = _chain(2, f"{tag}{rounds}_")
                got = f.realize((3, 4), inputs={inp: a})
                np.testing.assert_allclose(got, halo.reference(f, (3, 4), inputs={inp: a}),
                                           rtol=1e-5)
            except Exception as e:
                errors.append(repr(e))
                return
            rounds += 1

    threads = [threading.Thread(target=deep),
               *(threading.Thread(target=shallow, args=(t,)) for t in "ab")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sys.getrecursionlimit() == limit


def test_threads_lower_realize_and_evaluate_at_once():
    assert_survives_in_a_child("test_threads_lower_at_once")


def test_running_out_of_depth_is_a_halo_error_fast():
    """Deep work that recurses past what halo follows is a HaloError saying what nested
    too deeply, fast, and the recursion limit is back where it was."""
    def forever(k: int) -> int:
        return forever(k + 1) + 1

    limit = sys.getrecursionlimit()
    start = time.perf_counter()
    with pytest.raises(halo.HaloError, match=r"^lowering f: the program nests deeper"):
        run_deep("lowering f", forever, 0)
    assert time.perf_counter() - start < 5
    assert sys.getrecursionlimit() == limit


def test_a_long_inline_chain_lowers():
    """1,500 chained inline stages nest the IR past any default recursion limit."""
    x = halo.Var("x")
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f = halo.Func("f0")
    f[x] = inp[x]
    for k in range(1, 1501):
        g = halo.Func(f"f{k}")
        g[x] = f[x] + 1.0
        f = g
    got = f.realize((3,), inputs={inp: np.zeros(3, np.float32)})
    np.testing.assert_array_equal(got, [1500.0] * 3)


def test_the_compile_cache_is_safe_from_several_threads():
    """Hits, misses and evictions of the in-memory compile cache from several threads (a
    check-then-act race raised KeyError from move_to_end when another thread evicted the
    entry in between)."""
    cache = LRUCache(capacity=2)
    errors: list[str] = []

    def hammer(seed: int) -> None:
        keys = np.random.default_rng(seed).integers(0, 4, 20_000)
        try:
            for k in keys:
                assert cache.get((int(k),), lambda k=k: ("compiled", int(k))) == ("compiled", k)
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=hammer, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
