"""Masked stores of one constant lane: LLVM 22 stored a truncated vector's lane at its
untruncated width on AVX-512 hosts (llvm/llvm-project#179489); halo makes them scalar."""
from __future__ import annotations

import ctypes
import itertools

import numpy as np
import pytest

import halo
from halo.backends.llvm.jit import jit_compile
from halo.backends.llvm.single_lane_stores import split_single_lane_stores

NUMPY = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def truncating_store(wide: int, narrow: int, lanes: int, mask: list[bool]) -> str:
    bits = ", ".join(f"i1 {str(b).lower()}" for b in mask)
    vec, masks = f"<{lanes} x i{narrow}>", f"<{lanes} x i1>"
    return f"""
declare void @llvm.masked.store.v{lanes}i{narrow}.p0({vec}, ptr, {masks})
define void @f(ptr noalias %p, ptr noalias %q) {{
  %v = load <{lanes} x i{wide}>, ptr %q
  %w = trunc <{lanes} x i{wide}> %v to {vec}
  call void @llvm.masked.store.v{lanes}i{narrow}.p0({vec} %w, ptr align 1 %p, {masks} <{bits}>)
  ret void
}}
"""


@pytest.mark.parametrize("wide, narrow, lanes, lane",
                         [(w, n, lanes, lane) for (w, n), lanes, lane in itertools.product(
                             [(32, 8), (16, 8), (32, 16), (64, 32)], [4, 8, 16], [0, 3])])
def test_a_truncated_single_lane_store_writes_one_element(wide, narrow, lanes, lane):
    mask = [i == lane for i in range(lanes)]
    native = jit_compile(truncating_store(wide, narrow, lanes, mask))
    out = np.full(lanes * narrow // 8 + 16, 0x5A, dtype=np.uint8)
    values = (np.arange(lanes) + 0x11223341).astype(np.uint64).astype(NUMPY[wide])
    ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(
        native.function_address("f"))(out.ctypes.data, values.ctypes.data)
    want = np.full_like(out, 0x5A)
    want[: lanes * narrow // 8].view(NUMPY[narrow])[lane] = values[lane].astype(NUMPY[narrow])
    np.testing.assert_array_equal(out, want)
    assert "@llvm.masked.store" not in native.optimized_ir.split("define")[1]


def test_only_constant_single_lane_masks_are_rewritten():
    two = truncating_store(32, 8, 8, [True, True] + [False] * 6)
    assert split_single_lane_stores(two) == two
    one = split_single_lane_stores(truncating_store(32, 8, 8, [False] * 5 + [True, False, False]))
    assert "extractelement <8 x i8> %w, i64 5" in one
    assert "getelementptr i8, ptr %p, i64 5" in one and "call void @llvm.masked" not in one


def test_a_guarded_uint8_tail_of_one_lane_stays_inside_the_output():
    """vectorize(x, 8) over 9 columns leaves a one-lane tail; its uint8 store must not
    write the three bytes after it (past the end of the output, on the last row)."""
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.int32, 2, "inp")
    f = halo.Func("f")
    f[y, x] = halo.cast(halo.uint8, halo.clamp(inp[y, x] * 3, 0, 255))
    f.bound("x", 0, 9).bound("y", 0, 3)
    f.split("x", "xo", "xi", 8, tail="guard").vectorize("xi")
    a = np.random.default_rng(0).integers(0, 90, (3, 9)).astype(np.int32)
    backing = np.full(3 * 9 + 8, 0xEE, dtype=np.uint8)
    out = backing[:27].reshape(3, 9)
    f.realize(out=out, inputs={inp: a})
    np.testing.assert_array_equal(out, halo.reference(f, (3, 9), inputs={inp: a}))
    assert (backing[27:] == 0xEE).all(), backing[27:]
