"""Found by `python -m halo.fuzz --target cuda --seed 20261127` (program 20261127000030,
schedule 20261127000090): s5_local's channel loop, split by 4 over one channel, runs 4
times with its tail guarded, and red3, computed inside it, was computed for the guarded
channels too. Its region came from the channel's promise (`promise_clamped`) with the
promise taken off: a point out of range, reflected by the mirror into a channel of b1
that no one computed, and the kernel read shared memory out of bounds ("an illegal
memory access"). A guarded promise left in a region is now a clamp
(bounds_inference.py), so the guarded iterations compute a point that b1 covers. Needs a GPU; the region is
checked without one in tests/lower/test_bounds_inference.py."""
import numpy as np

import halo


def build():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.int32, 3, "in0")
    b1 = halo.Func("b1")
    b1[c, y, x] = halo.boundary.mirror_interior(in0)[c, y, x]
    s4 = halo.Func("s4")
    r2 = halo.RDom((0, 2), (0, 2), name="r2")
    red3_call = halo.sum(b1[c, y * 2 + r2.x, x * 2 + r2.y], name="red3")
    red3 = red3_call.func
    s4[c, y, x] = red3_call // 4
    s5 = halo.Func("s5")
    s5[c, y, x] = halo.boundary.mirror_interior(s4, bounds=[(0, 2), (0, 19), (0, 5)])[c, y, x]
    xo1, xi2, xv3, xt4, yo1, yi2, co3, ci4 = halo.vars("xo1 xi2 xv3 xt4 yo1 yi2 co3 ci4")
    s5_local = s5.cache_write("local")
    s5.split(x, xo1, xi2, 12).split(xi2, xv3, xt4, 3)
    s5.gpu_blocks(xo1).vthread(xv3).gpu_threads(xt4)
    s5_local.compute_at(s5, xt4).split(y, yo1, yi2, 3).split(c, co3, ci4, 4)
    red3.compute_at(s5_local, yo1).store_in("local").unroll(x, 3).unroll(y, 3)
    b1.compute_at(s5, xv3).split(x, xo1, xi2, 5).gpu_threads(xi2)
    return s5, in0


def test_a_producer_inside_a_guarded_tail_through_a_mirror():
    s5, in0 = build()
    rng = np.random.default_rng(20261127000030)
    inputs = {in0: rng.integers(-1000, 1001, (2, 1, 1)).astype("int32")}
    got = s5.realize((2, 17, 6), inputs=inputs, origin=(0, 1, -5), target="cuda")
    want = halo.reference(s5, (2, 17, 6), inputs=inputs, origin=(0, 1, -5))
    np.testing.assert_array_equal(got, want)
