"""A gather (a vector index that is not a dense ramp) into a buffer of more than 2**31
elements: its int32 lanes were computed in 32 bits and extended after, so the lanes past
element 2**31 wrapped to addresses 2 GB before the buffer. Vector indices are now
computed in 64 bits, as scalar ones are. Only a few pages of the buffer are touched."""
from __future__ import annotations

import numpy as np

from halo.backends.arguments import Argument
from halo.backends.llvm import compile_function
from halo.ir.nodes import Load, Mul, Ramp, Store, Var, const
from halo.ir.types import int32, uint8

from .child_process import assert_survives_in_a_child

LANES = 4


def _run() -> None:
    index = Ramp(Mul(Var("row"), Var("width")), Var("step"), LANES)
    body = Store("out", Ramp(const(0), const(1), LANES), Load(uint8.with_lanes(LANES),
                                                             "inp", index))
    f = compile_function("gather", body, [Argument("inp", "buffer", uint8),
                                          Argument("out", "buffer", uint8),
                                          Argument("row", "scalar", int32),
                                          Argument("step", "scalar", int32),
                                          Argument("width", "scalar", int32)])
    inp = np.zeros(2**31 + 4096, dtype=np.uint8)  # calloc'd: untouched pages cost nothing
    start, step = 2**16 * 2**15, 3
    inp[start:start + step * LANES:step] = [11, 22, 33, 44]
    out = np.zeros(LANES, dtype=np.uint8)
    f(inp, out, 2**16, step, 2**15)
    np.testing.assert_array_equal(out, [11, 22, 33, 44])


def test_a_gather_past_element_2_31_is_addressed_in_64_bits():
    assert_survives_in_a_child("test_gather_past_2_31_elements")
