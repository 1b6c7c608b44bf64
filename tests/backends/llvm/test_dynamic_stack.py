"""Stack buffers whose size is known only at run time (`Allocate` in "stack" of a
non-constant size): an `alloca` up to `DYNAMIC_STACK_BYTES`, the heap past it, and the
stack pointer restored after each, so a loop around one doesn't grow the stack.

The sizes that would overflow the stack run in a child process (an overflow kills the
child, not the test run): a 48 MB buffer must take the heap path, and 2,003 rows of a
16 KB row buffer (32 MB if each row's alloca stayed on the stack) must reuse one slot.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import halo
from halo.backends.arguments import Argument
from halo.backends.llvm import compile_function
from halo.backends.llvm.codegen import DYNAMIC_STACK_BYTES
from halo.ir.nodes import Add, Allocate, Block, For, ForKind, Load, Mul, Store, Var, const
from halo.ir.types import float32, int32
from tests.fuzz.regressions.child_process import assert_survives_in_a_child

y, x, width = Var("y"), Var("x"), Var("width")


def _row_reversal():
    """`out[y, x] = 2 * inp[y, width - 1 - x]` through a row buffer of `width` float32 on
    the stack, allocated at each row."""
    index = Add(Mul(y, width), x)
    fill = For("x", const(0), width, ForKind.SERIAL,
               Store("row", x, Mul(Load(float32, "inp", index), const(2.0, float32))))
    read = For("x", const(0), width, ForKind.SERIAL,
               Store("out", index, Load(float32, "row", Add(Mul(x, const(-1)),
                                                            Add(width, const(-1))))))
    body = For("y", const(0), Var("height"), ForKind.SERIAL,
               Allocate("row", float32, width, Block((fill, read)), scope="stack"))
    args = [Argument("inp", "buffer", float32), Argument("out", "buffer", float32),
            Argument("height", "scalar", int32), Argument("width", "scalar", int32)]
    return compile_function("row_reversal", body, args)


def test_the_buffer_is_an_alloca_below_the_limit_and_on_the_heap_above_it():
    """The code saves the stack pointer, chooses alloca or the heap by the size in bytes
    (either aligned to a cache line), frees a heap buffer and restores the stack pointer
    after the body."""
    source = _row_reversal().source()
    for needed in ("@llvm.stacksave", "@free", "@llvm.stackrestore"):
        assert needed in source, needed
    assert re.search(r"alloca i8, i64 %[\w.]+, align 64", source)
    assert re.search(r"@aligned_alloc\(i64 (noundef )?64, ", source)
    assert re.search(rf"icmp u[lg][te] i64 %[\w.]+, {DYNAMIC_STACK_BYTES}\b", source)


@pytest.mark.parametrize("columns", [1, 7, DYNAMIC_STACK_BYTES // 4, DYNAMIC_STACK_BYTES // 4 + 1,
                                     10007])
def test_rows_on_either_side_of_the_limit_are_right(columns):
    """Rows of 4 bytes to 40 KB, the last stack-sized and the first heap-sized among them."""
    f = _row_reversal()
    inp = np.random.default_rng(columns).random((3, columns), dtype=np.float32)
    out = np.zeros_like(inp)
    f(inp, out, 3, columns)
    np.testing.assert_array_equal(out, 2 * inp[:, ::-1])


def _realize(huge: bool) -> None:
    yv, xv = halo.vars("y x")
    inp = halo.ImageParam(halo.uint8, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[yv, xv] = halo.cast(halo.float64, inp[yv, xv]) * 2.0
    f[yv, xv] = halo.cast(halo.uint8, g[yv, xv] / 2.0)
    if huge:  # 48 MB of float64 on the "stack"
        g.compute_root().store_in("stack")
        shape = (2000, 3000)
    else:  # 16 KB at each of 2003 rows: 32 MB if every row's alloca stayed
        g.compute_at(f, yv).store_in("stack")
        shape = (2003, DYNAMIC_STACK_BYTES // 8)
    image = np.random.default_rng(0).integers(0, 255, shape, dtype=np.uint8)
    np.testing.assert_array_equal(f.realize(shape, inputs={inp: image}), image)


def _run() -> None:
    _realize(huge=True)
    _realize(huge=False)


def test_sizes_the_stack_could_not_hold_run():
    """(in a child process)"""
    assert_survives_in_a_child("test_dynamic_stack", package="tests.backends.llvm")
