"""Found by `python -m halo.fuzz --target cuda --seed 20261128` (program 20261128001287,
schedule 20261128003862): a kernel read out of bounds ("an illegal memory access", seen
at the next cuMemAlloc) with s8's 64-wide guarded tiles over 16 columns and s6 tiled by
8 inside them. It crashed before guarded promises became clamps in regions
(bounds_inference.py) and runs right since, as the two tests beside it. Needs a GPU."""
import numpy as np

import halo


def test_a_guarded_tile_wider_than_its_output_with_producers_tiled_inside():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.int16, 3, "in0")
    b4 = halo.Func("b4")
    b4[c, y, x] = halo.boundary.repeat_image(in0)[c, y, x]
    s5 = halo.Func("s5")
    s5[c, y, x] = ((halo.cast(halo.int32, b4[c, y // 2, x // 2]) + halo.cast(halo.int32, b4[c, (y + 1) // 2, (x + 1) // 2])) // 2)
    s6 = halo.Func("s6")
    r7 = halo.RDom((0, 4), name="r7")
    s6[c, y, x] = halo.sum((s5[r7.x, y, x] * ((r7.x + 2 * c) % 3 - 1)))
    s8 = halo.Func("s8")
    s8[c, y, x] = s6[c, y, x + halo.clamp(s6[c, y, x] % 5, 0, 4) - 2]

    x, xo1, xi2, y, yo1, xo2, yi3, xi4, yo2, xi3, yi4 = halo.vars("x xo1 xi2 y yo1 xo2 yi3 xi4 yo2 xi3 yi4")
    s8.gpu_tile(x, xo1, xi2, 64, tail='guard')
    s6.compute_at(s8, xo1)
    s6.tile(y, x, yo1, xo2, yi3, xi4, 3, 8)
    s5.compute_at(s6, yo1)
    b4.compute_at(s8, y)
    b4.gpu_tile(x, y, xo1, yo2, xi3, yi4, 3, 3)

    rng = np.random.default_rng(20261128001287)
    inputs = {
        in0: rng.integers(-300, 301, (4, 9, 23)).astype("int16"),
    }
    got = s8.realize((4, 16, 16), inputs=inputs, origin=(0, -4, 1), target="cuda")
    want = halo.reference(s8, (4, 16, 16), inputs=inputs, origin=(0, -4, 1))
    np.testing.assert_array_equal(got, want)

