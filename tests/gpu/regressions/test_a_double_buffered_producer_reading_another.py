"""Found by `python -m halo.fuzz --target cuda --seed 20261411` (program 20261411000206,
schedule 20261411000618): s4 and s7 are double-buffered at the same loop, and s7's
producer reads s4 in the same step ahead; s4's copy from global memory was asynchronous,
so s7 read it before it landed (373 of 396 points wrong). A buffer another producer of
its loop reads is now filled at once."""
import numpy as np

import halo


def test_a_double_buffered_producer_reading_another():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.int32, 2, "in0")
    b1 = halo.Func("b1")
    b1[y, x] = halo.boundary.repeat_image(in0)[y, x]
    s2 = halo.Func("s2")
    s2[y, x] = ((halo.cast(halo.float32, b1[y, x]) + halo.cast(halo.float32, x)) + halo.cast(halo.float32, y))
    s4 = halo.Func("s4")
    r3 = halo.RDom((-1, 3), (0, 1), name="r3")
    red5_call = halo.maximum((s2[y + r3.x, x + r3.y] * halo.cast(halo.float32, (r3.x - r3.y + 2))), name="red5")
    red5 = red5_call.func
    s4[y, x] = red5_call
    s6 = halo.Func("s6")
    s6[c, y, x] = halo.select(c == 0, s4[y, x], (s4[y, x] * halo.cast(halo.float32, (c + 1))))
    s7 = halo.Func("s7")
    s7[c, y, x] = halo.clamp(((halo.clamp(halo.cast(halo.int32, halo.clamp(s6[c, y, x], -220608.0, 220608.0)), -4096, 4096) * halo.clamp(halo.cast(halo.int32, halo.clamp(s6[c, y, x], -220608.0, 220608.0)), -4096, 4096)) - 2), -16777216, 16777216)
    s8 = halo.Func("s8")
    r9 = halo.RDom((0, 4), name="r9")
    s8[c, y, x] = halo.sum(halo.clamp((s7[r9.x, y, x] * ((r9.x + 2 * c) % 3 - 1)), -4194304, 4194304))

    x, xo1, xi2, y, yo2, xi3, yi4, r3xo1, r3xi2, r3yo3, r3yi4, r3yi4o5, r3yi4i6, xv3, xt4 = halo.vars("x xo1 xi2 y yo2 xi3 yi4 r3xo1 r3xi2 r3yo3 r3yi4 r3yi4o5 r3yi4i6 xv3 xt4")
    s8.split(x, xo1, xi2, 8, tail='shift_inwards')
    s8.gpu_blocks(xo1)
    s7.compute_at(s8, xi2)
    s7.double_buffer(2)
    s4.compute_at(s8, xi2)
    s4.double_buffer(2)
    s4.gpu_threads(x)
    red5.compute_root()
    red5.store_in('global')
    red5.reorder_storage(x, y)
    red5.reorder(x, y)
    red5.gpu_tile(x, y, xo1, yo2, xi3, yi4, 8, 3, tail='round_up')
    red5.update(0).gpu_blocks(x)
    red5.update(0).split(r3.x, r3xo1, r3xi2, 4)
    red5.update(0).gpu_threads(r3xi2)
    red5.update(0).reorder(r3xi2, r3xo1)
    red5.update(0).split(r3.y, r3yo3, r3yi4, 8, tail='guard')
    red5.update(0).split(r3yi4, r3yi4o5, r3yi4i6, 8, tail='guard')
    s2.compute_inline()
    b1.compute_root()
    b1.split(x, xo1, xi2, 32, tail='shift_inwards')
    b1.split(xi2, xv3, xt4, 16)
    b1.gpu_blocks(xo1)
    b1.vthread(xv3)
    b1.gpu_threads(xt4)
    b1.gpu_blocks(y)

    rng = np.random.default_rng(20261411000206)
    inputs = {
        in0: rng.integers(-1000, 1001, (13, 11)).astype("int32"),
    }
    got = s8.realize((4, 11, 9), inputs=inputs, origin=(0, 0, 0), target='cuda')
    want = halo.reference(s8, (4, 11, 9), inputs=inputs, origin=(0, 0, 0))
    np.testing.assert_array_equal(got, want)

