"""Parallel loops compiled by the LLVM backend: the body outlined into a task that libgomp
runs on a team of threads, each on its own chunk, with the same results as a serial loop."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from halo.backends.arguments import Argument
from halo.backends.llvm import compile_function, parallel
from halo.backends.llvm.codegen import generate_module
from halo.errors import HaloError
from halo.ir.nodes import (
    LT,
    Add,
    Allocate,
    Block,
    Call,
    CallKind,
    Cast,
    For,
    ForKind,
    Let,
    LetStmt,
    Load,
    Mod,
    Mul,
    Select,
    Store,
    Sub,
    Var,
    const,
)
from halo.ir.types import ALL_TYPES, Type, float32, float64, int8, int32, int64, uint32

i, x, y = Var("i"), Var("x"), Var("y")
n, width, height = Var("n"), Var("width"), Var("height")
SERIAL, PARALLEL = ForKind.SERIAL, ForKind.PARALLEL


def loop(name: str, extent, body, kind=PARALLEL, minimum=const(0)) -> For:
    return For(name, minimum, extent, kind, body)


def buffer(name: str, t: Type) -> Argument:
    return Argument(name, "buffer", t)


def scalar(name: str, t: Type) -> Argument:
    return Argument(name, "scalar", t)


def square_minus_triple(v):
    """v * v - 3 * v: a value that differs for every index it is stored at."""
    return Sub(Mul(v, v), Mul(const(3, v.type), v))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("extent", [0, 1, 2, 3, 7, 1000, -5])
def test_parallel_loop_matches_numpy(extent, threads):
    """out[i] = i * i - 3 * i over any extent, fewer iterations than threads included, is
    what NumPy computes, and elements outside the loop stay untouched."""
    body = loop("i", n, Store("out", i, square_minus_triple(i)), minimum=const(2))
    f = compile_function("fill", body, [buffer("out", int32), scalar("n", int32)],
                         num_threads=threads)
    out = np.full(1010, -1, dtype=np.int32)
    f(out, extent)
    expected = np.full(1010, -1, dtype=np.int32)
    indices = np.arange(2, 2 + max(extent, 0))
    expected[indices] = indices * indices - 3 * indices
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("t", [int8, int32, uint32, int64], ids=str)
def test_parallel_loop_of_any_integer_type(t):
    """A parallel loop counts in its own integer type, signed or unsigned, 8 to 64 bits."""
    v = Var("v", t)
    body = For("v", const(3, t), Var("m", t), PARALLEL, Store("out", v, Cast(int64, v)))
    f = compile_function("typed", body, [buffer("out", int64), scalar("m", t)], num_threads=2)
    out = np.zeros(120, dtype=np.int64)
    f(out, 100)
    np.testing.assert_array_equal(out, np.r_[np.zeros(3), np.arange(3, 103), np.zeros(17)])


@pytest.mark.parametrize(("outer", "inner"), [(SERIAL, PARALLEL), (PARALLEL, SERIAL),
                                              (PARALLEL, PARALLEL)],
                         ids=["parallel in serial", "serial in parallel", "nested parallel"])
def test_nested_loops(outer, inner):
    """out[y, x] = 1000 y + x through a two-deep nest whose loops are serial or parallel."""
    value = Add(Mul(y, const(1000)), x)
    body = loop("y", height, loop("x", width, Store("out", Add(Mul(y, width), x), value),
                                  kind=inner), kind=outer)
    f = compile_function("nest", body, [buffer("out", int32), scalar("height", int32),
                                        scalar("width", int32)], num_threads=2)
    out = np.zeros((13, 7), dtype=np.int32)
    f(out, 13, 7)
    rows, columns = np.indices((13, 7))
    np.testing.assert_array_equal(out, 1000 * rows + columns)


def test_parallel_body_with_allocations_lets_and_outer_loop_variables():
    """A parallel body that fills a stack buffer and a heap buffer per iteration and reads
    a let, a scalar argument and the enclosing loop's variable gets what NumPy computes:
    each thread and iteration has its own buffers."""
    c, s, t = Var("c"), Var("s"), Var("t")
    fill_stack = loop("c", const(4), Store("tmp", c, Add(t, c)), kind=SERIAL)
    fill_heap = loop("c", Add(x, const(1)),
                     Store("heap", c, Mul(Load(int32, "tmp", Mod(c, const(4))), c)),
                     kind=SERIAL)
    result = Store("out", Add(Mul(y, width), x),
                   Add(Load(int32, "tmp", const(3)), Load(int32, "heap", x)))
    per_x = LetStmt("t", Add(x, s), Allocate(
        "tmp", int32, const(4), Allocate("heap", int32, Add(x, const(1)),
                                         Block((fill_stack, fill_heap, result))),
        scope="stack"))
    body = loop("y", height, LetStmt("s", Add(Mul(y, const(10)), Var("k")),
                                     loop("x", width, per_x)), kind=SERIAL)
    f = compile_function("scratch", body, [buffer("out", int32), scalar("k", int32),
                                           scalar("height", int32), scalar("width", int32)],
                         num_threads=2)
    out = np.zeros((5, 300), dtype=np.int32)
    f(out, 7, 5, 300)
    rows, columns = np.indices((5, 300))
    t_values = columns + rows * 10 + 7
    np.testing.assert_array_equal(out, (t_values + 3) + (t_values + columns % 4) * columns)


@pytest.mark.parametrize("t", ALL_TYPES, ids=str)
def test_parallel_body_reads_a_scalar_of_each_type(t):
    """A scalar argument of each type, float16 and bool included, reaches every iteration
    through the closure with its exact value."""
    body = loop("i", const(50), Store("out", i, Var("p", t)))
    f = compile_function("broadcast", body, [buffer("out", t), scalar("p", t)], num_threads=2)
    out = np.zeros(50, dtype=t.numpy)
    value = True if t.is_bool else 5.5 if t.is_float else 100
    f(out, value)
    np.testing.assert_array_equal(out, np.full(50, value, dtype=t.numpy))


def test_one_and_two_threads_give_identical_results():
    """Float results don't depend on the thread count: each iteration computes alone."""
    sine = Var("sine", float64)
    value = Let("sine", Call(float64, "sin", (Cast(float64, i),), CallKind.MATH),
                Select(LT(const(0, float64), sine), Mul(sine, Load(float64, "inp", i)),
                       Cast(float64, Load(float32, "weights", i))))
    args = [buffer("inp", float64), buffer("weights", float32), buffer("out", float64),
            scalar("n", int32)]
    rng = np.random.default_rng(0)
    inp, weights = rng.standard_normal(999), rng.standard_normal(999).astype(np.float32)
    results = []
    for threads in (1, 2):
        f = compile_function("identical", loop("i", n, Store("out", i, value)), args,
                             num_threads=threads)
        out = np.zeros(999)
        f(inp, weights, out, 999)
        results.append(out)
    np.testing.assert_array_equal(results[0], results[1])


def test_task_is_outlined_and_run_by_gomp_parallel():
    """The optimized IR holds the outlined task, which the function hands to GOMP_parallel
    with the thread count as a constant; the task claims chunks with an atomic add."""
    body = loop("i", n, Store("out", i, i))
    f = compile_function("outlined", body, [buffer("out", int32), scalar("n", int32)],
                         num_threads=3)
    assert re.search(r"define internal void @outlined\.i\.task\(ptr", f.llvm_ir)
    assert re.search(r"call void @GOMP_parallel\(ptr nonnull @outlined\.i\.task, "
                     r"ptr nonnull %closure, i32 3, i32 0\)", f.llvm_ir)
    assert "omp_get_num_threads" in f.llvm_ir and re.search(r"atomicrmw add ptr", f.llvm_ir)


def test_closure_captures_only_what_the_body_uses():
    """Unused buffers and scalars stay out of the closure: it holds min, extent, the count
    of claimed iterations, the one scalar and the two buffers the body reads or writes."""
    body = loop("i", n, Store("out", i, Add(Load(int32, "inp", i), Var("k"))))
    args = [buffer("inp", int32), buffer("unused", float32), buffer("out", int32),
            scalar("k", int32), scalar("unused_scalar", float64), scalar("n", int32)]
    module = str(generate_module("narrow", body, args, num_threads=2))
    assert re.findall(r"alloca \{[^}]*\}", module) == ["alloca {i32, i32, i32, i32, ptr, ptr}"]


def test_stack_allocation_in_parallel_body_is_one_per_thread():
    """A stack allocation in a parallel body is an alloca in the entry block of the task's
    chunk function (always inlined into the task), which each thread runs once."""
    body = loop("i", n, Allocate("tmp", int32, const(4), Block((
        Store("tmp", const(0), i), Store("out", i, Load(int32, "tmp", const(0))))),
        scope="stack"))
    module = str(generate_module("scratch", body, [buffer("out", int32), scalar("n", int32)],
                                 num_threads=2))
    chunk = module[module.index('define internal void @"scratch.i.task.chunk"'):]
    assert "alwaysinline" in chunk[:chunk.index("{")]
    chunk_entry = chunk[chunk.index("entry:"):chunk.index("body:")]
    assert '%"tmp" = alloca i32, i64 4' in chunk_entry


def test_missing_libgomp_is_reported_at_compile_time(monkeypatch):
    """Without libgomp, compiling a parallel loop raises a HaloError that says what to
    install."""
    monkeypatch.setattr(parallel.ctypes.util, "find_library", lambda name: None)
    monkeypatch.setattr(parallel, "_LIBGOMP_FALLBACK", "/nonexistent/libgomp.so.1")
    parallel.load_libgomp.cache_clear()
    try:
        with pytest.raises(HaloError, match="libgomp.*apt install libgomp1"):
            compile_function("nogomp", loop("i", n, Store("out", i, i)),
                             [buffer("out", int32), scalar("n", int32)])
    finally:
        parallel.load_libgomp.cache_clear()


def test_chunk_function_takes_its_buffers_noalias():
    """The task's chunk function takes each buffer as a `noalias` pointer, as the kernel
    does, so a parallel body keeps the kernel's aliasing facts."""
    body = loop("i", n, Store("out", i, Load(int32, "inp", i)))
    module = str(generate_module("copy", body, [buffer("inp", int32), buffer("out", int32),
                                                scalar("n", int32)], num_threads=2))
    header = module[module.index('define internal void @"copy.i.task.chunk"'):]
    header = header[:header.index("{")]
    assert header.count("ptr noalias") == 2


ROOT = Path(__file__).resolve().parents[3]
_SPIN_SCRIPT = """
import os
from halo.backends.llvm.parallel import load_libgomp
load_libgomp()
print(os.environ.get("GOMP_SPINCOUNT"), os.environ.get("OMP_WAIT_POLICY"))
"""


@pytest.mark.parametrize("env, expected", [
    ({}, f"{parallel.SPIN_COUNT} None"),
    ({"OMP_WAIT_POLICY": "ACTIVE"}, "None ACTIVE"),
    ({"GOMP_SPINCOUNT": "5"}, "5 None"),
])
def test_libgomp_spins_briefly_unless_the_user_says_otherwise(env, expected):
    """libgomp's default spin (300,000 rounds) cost ~8 ms per parallel loop with one core
    busy elsewhere; halo sets a short GOMP_SPINCOUNT before libgomp is loaded (it reads
    it then, so in a fresh process), and leaves the user's wait policy alone."""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    done = subprocess.run([sys.executable, "-c", _SPIN_SCRIPT],
                          env={**clean, "PYTHONPATH": str(ROOT), **env}, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == expected.split()
