"""A stack buffer whose constant bound is megabytes though what runs is a tile: found by
`python -m halo.fuzz --seed 2801` (program 2801001597, schedule 2801004791). A local cache
of a shifted-inwards tile, fused and split with round_up, was bounded by the loops' ranges
through a clamp the bound couldn't see through (16 MB), and that `alloca` overflowed the
stack. A host stack buffer whose constant bound passes a megabyte is now sized when it
runs (on the stack when small, else on the heap), and one whose constant size passes it
goes on the heap. Both run in a child process: an overflow kills the child, not the
test run."""
import numpy as np

import halo
from halo.ir import nodes as n
from halo.ir.visitor import walk
from tests.fuzz.regressions.child_process import assert_survives_in_a_child


def _fused_local_cache():
    c, y, x = halo.vars("c y x")
    inp = halo.ImageParam(halo.uint8, 3, "inp")
    b = halo.Func("b")
    b[c, y, x] = halo.boundary.mirror_interior(inp)[c, y, x]
    s = halo.Func("s")
    s[y, x] = (halo.cast(halo.int32, b[0, x, y]) * 3 + halo.cast(halo.int32, b[1, x, y]) * 2
               + halo.cast(halo.int32, b[3, x, y]))
    out = halo.Func("out")
    out[y, x] = s[x, y]
    xo, xi, yx, yxo, yxi, yxii = halo.vars("xo xi yx yxo yxi yxii")
    local = out.cache_write("local")
    out.split(x, xo, xi, 16, tail="shift_inwards")
    local.compute_at(out, xo)
    local.fuse(y, x, yx)
    local.split(yx, yxo, yxi, 16, tail="round_up")
    local.specialize(inp.shape[2] > 16).split(yxi, yxi, yxii, 8, tail="round_up")
    return inp, out


def _huge_constant_stack_buffer():
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g = halo.Func("g")
    g[y, x] = inp[y, x] * 2.0
    out = halo.Func("out")
    out[y, x] = g[y, x] + g[y, x]
    g.compute_root().store_in("stack").bound(y, 0, 1024).bound(x, 0, 1024)
    return inp, out


def _run():
    inp, out = _fused_local_cache()
    data = np.random.default_rng(2801001597).integers(0, 256, (4, 16, 3)).astype("uint8")
    np.testing.assert_array_equal(out.realize((17, 11), inputs={inp: data}),
                                  halo.reference(out, (17, 11), inputs={inp: data}))
    inp, out = _huge_constant_stack_buffer()
    data = np.random.default_rng(5).random((1024, 1024), dtype=np.float32)
    np.testing.assert_array_equal(out.realize((1024, 1024), inputs={inp: data}), data * 4)


def _allocations(out) -> dict[str, n.Allocate]:
    return {s.name: s for s in walk(out.lower().stmt) if isinstance(s, n.Allocate)}


def test_a_loose_bound_sizes_the_buffer_at_run_time():
    _, out = _fused_local_cache()
    local = _allocations(out)["out_local"]
    assert local.scope == "stack" and not isinstance(local.size, n.Const)


def test_a_constant_size_past_a_megabyte_goes_on_the_heap():
    _, out = _huge_constant_stack_buffer()
    assert _allocations(out)["g"].scope == "heap"


def test_both_run_right():
    assert_survives_in_a_child("test_a_stack_buffer_whose_bound_is_megabytes")
