"""A round_up split in a specialization of a Func stored at an update's loop and computed
inside it: the Func slid, storage folding kept one point, and the tile's points overwrote
it (mismatch found by `python -m halo.fuzz --seed 2611`: program 2611000128, schedule
2611000386; fixed by sliding_window checking every specialization).

    195 of 247 points differ; first at (0, 0): got np.float32(17.64041), reference
    np.float32(20.335518)
"""
import numpy as np

import halo


def test_mismatch_2611000128_2611000386():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.float32, 2, "in0")
    b1 = halo.Func("b1")
    b1[y, x] = halo.boundary.mirror_image(in0)[y, x]
    s2 = halo.Func("s2")
    s2[y, x] = (halo.sin(b1[y, x]) + 3.75)
    s4 = halo.Func("s4")
    r3 = halo.RDom((0, 1), (-1, 2), name="r3")
    s4[y, x] = halo.sum((s2[y + r3.x, x + r3.y] * halo.cast(halo.float32, (r3.x - r3.y + 2))))
    s5 = halo.Func("s5")
    s5[y, x] = (halo.cos(s4[y, x]) + 2.0)
    s8 = halo.Func("s8")
    r7 = halo.RDom((0, 1), name="r7")
    s8[y, x] = 0.0
    s8[y, x] += (s5[y, r7.x] * s4[r7.x, x])

    x, xo1, xi2, xi1 = halo.vars("x xo1 xi2 xi1")
    s8.update(0).split(x, xo1, xi2, 5)
    s5.compute_at(s8.update(0), r7.x)
    s5.store_at(s8.update(0), xo1)
    s5.specialize((in0.shape[1] >= 4) & (in0.shape[1] % 2 == 1)).split(x, x, xi1, 2, tail='round_up')

    rng = np.random.default_rng(2611000128)
    inputs = {
        in0: (rng.integers(-32, 33, (6, 17)) / 4).astype("float32"),
    }
    got = s8.realize((19, 13), inputs=inputs, origin=(0, -4))
    want = halo.reference(s8, (19, 13), inputs=inputs, origin=(0, -4))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0.047959133392)


if __name__ == "__main__":
    test_mismatch_2611000128_2611000386()
