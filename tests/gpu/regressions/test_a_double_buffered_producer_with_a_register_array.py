"""Found by `python -m halo.fuzz --target cuda --seed 20261205` (program 20261205000171,
schedule 20261205000513): the producer of a double-buffered Func (`s2`) computes `b1` in
each thread's registers from a global load; that store became an asynchronous copy into
local memory, which cp.async can't address ("an illegal instruction was encountered").
Only the double-buffered Func's own stores are asynchronous now."""
import numpy as np

import halo


def test_a_double_buffered_producer_with_a_register_array():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.int32, 3, "in0")
    in1 = halo.ImageParam(halo.float32, 2, "in1")
    b1 = halo.Func("b1")
    b1[c, y, x] = halo.boundary.mirror_image(in0)[c, y, x]
    s2 = halo.Func("s2")
    r3 = halo.RDom((0, 2), name="r3")
    s2[c, y, x] = halo.sum((b1[r3.x, y, x] * ((r3.x + 2 * c) % 3 - 1)))
    s6 = halo.Func("s6")
    s6[c, y, x] = (halo.min(halo.cast(halo.float32, s2[c, y, x]), halo.cast(halo.float32, x)) + -1.5)
    s7 = halo.Func("s7")
    s7[y, x] = (halo.min(halo.cast(halo.int16, halo.clamp(s6[1, y, x], -4097.5, 1998.5)), halo.cast(halo.int16, halo.clamp(s6[1, y, x], -4097.5, 1998.5))) // halo.cast(halo.int16, halo.clamp(s6[1, y, x], -4097.5, 1998.5)))
    b11 = halo.Func("b11")
    b11[y, x] = halo.boundary.mirror_interior(in1)[y, x]
    s13 = halo.Func("s13")
    r12 = halo.RDom((0, 2), name="r12")
    s13[y, x] = halo.sum((halo.cast(halo.float32, s7[y, r12.x]) * b11[r12.x, x]))
    s16 = halo.Func("s16")
    s16[y, x] = (halo.ceil(s13[y, x]) * 2.0)
    s17 = halo.Func("s17")
    s17[y, x] = halo.min((halo.cast(halo.int16, halo.clamp(s16[y, x], -32768.0, 32767.0)) // halo.cast(halo.int16, halo.clamp(s16[y, x], -32768.0, 32767.0))), -4)

    y, x, yo1, xo2, yi3, xi4 = halo.vars("y x yo1 xo2 yi3 xi4")
    s17.gpu_tile(y, x, yo1, xo2, yi3, xi4, 7, 8, tail='guard')
    s13.compute_root()
    s13.gpu_tile(y, x, yo1, xo2, yi3, xi4, 7, 32, tail='round_up')
    s7.compute_at(s13, xo2)
    s2.compute_at(s7, x)
    s2.double_buffer(3)
    s2.gpu_threads(y, x)
    b1.compute_at(s2, y)

    rng = np.random.default_rng(20261205000171)
    inputs = {
        in0: rng.integers(-1000, 1001, (2, 9, 3)).astype("int32"),
        in1: (rng.integers(-32, 33, (23, 1)) / 4).astype("float32"),
    }
    got = s17.realize((17, 6), inputs=inputs, origin=(0, 0), target='cuda')
    want = halo.reference(s17, (17, 6), inputs=inputs, origin=(0, 0))
    np.testing.assert_array_equal(got, want)

