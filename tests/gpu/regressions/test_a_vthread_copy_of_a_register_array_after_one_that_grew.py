"""Found by `python -m halo.fuzz --target cuda --seed 20261881` (program 20261881001360,
schedule 20261881004082): a Func (s6) computed inside a vthread loop, whose inline
maximum's register array (maximum0) is allocated twice, in the whole-tile and the tail
branches of a shifted tile. The vthread pass grew the first for its copies; the second, in
a branch it writes out once per copy (each copy allocating its own), was still indexed as
if grown, past its end: 168 of 272 points were the maximum's identity. A buffer's parts
now apply only inside the allocation that grew."""
import numpy as np

import halo


def test_a_vthread_copy_of_a_register_array_after_one_that_grew():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.uint8, 2, "in0")
    b1 = halo.Func("b1")
    b1[y, x] = halo.boundary.mirror_image(in0)[y, x]
    s3 = halo.Func("s3")
    r2 = halo.RDom((0, 6), (0, 11), name="r2")
    s3[y, x] = 0
    s3[r2.x, (r2.x + r2.y) % 3] += halo.cast(halo.int32, b1[r2.x, r2.y])
    s4 = halo.Func("s4")
    s4[y, x] = halo.boundary.constant_exterior(s3, 6, bounds=[(0, 17), (0, 1)])[y, x]
    s6 = halo.Func("s6")
    r5 = halo.RDom((0, 2), (0, 2), name="r5")
    s6[y, x] = halo.maximum(s4[y * 2 + r5.x, x * 2 + r5.y])
    s9 = halo.Func("s9")
    s9[y, x] = halo.select((x + 1) >= 2, s6[y, x], 9)

    x, xo1, xi2, xv3, xt4, y, yo1, xo2, yi3, xi4, yo2, xi3, yi4, u1, u1o1, u1i2 = halo.vars("x xo1 xi2 xv3 xt4 y yo1 xo2 yi3 xi4 yo2 xi3 yi4 u1 u1o1 u1i2")
    s9.split(x, xo1, xi2, 15, tail='shift_inwards')
    s9.split(xi2, xv3, xt4, 5)
    s9.gpu_blocks(xo1)
    s9.vthread(xv3)
    s6.compute_at(s9, xv3)
    s6.tile(y, x, yo1, xo2, yi3, xi4, 8, 7, tail='shift_inwards')
    s6.gpu_threads(yi3, xi4)
    s3.gpu_tile(x, y, xo1, yo2, xi3, yi4, 5, 7, tail='shift_inwards')
    s3_rf = s3.update(0).rfactor(r2.x, u1, name='s3_rf')
    s3.update(0).gpu_tile(x, xo2, xi3, 1, tail='guard')
    s3_rf.split(x, xo1, xi2, 6, tail='shift_inwards')
    s3_rf.gpu_blocks(xo1)
    s3_rf.update(0).gpu_tile(u1, u1o1, u1i2, 32, tail='guard')

    rng = np.random.default_rng(20261881001360)
    inputs = {
        in0: rng.integers(0, 256, (13, 16)).astype("uint8"),
    }
    got = s9.realize((16, 17), inputs=inputs, origin=(3, -4), target='cuda')
    want = halo.reference(s9, (16, 17), inputs=inputs, origin=(3, -4))
    np.testing.assert_array_equal(got, want)
