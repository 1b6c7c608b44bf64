"""Sliding along an outer loop (s2's y, b1 computed at s2's innermost ci1) was carried
over s6's xo1 loop around it, whose iteration moves the range of s2's x loop inside the
sliding loop: the first row of each column tile was taken as computed by the previous
tile, at other columns (found by `python -m halo.fuzz --seed 31`: program 31000369,
schedule 31001108). A window is carried over a loop only when the loops inside the
sliding loop keep their ranges across it.

    5 of 15 points differ; first at (0, 0, 2): got np.int32(103), reference np.int32(32)
"""
import numpy as np

import halo


def test_sliding_carried_over_a_loop_that_moves_the_inner_columns():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.uint8, 3, "in0")
    b1 = halo.Func("b1")
    b1[c, y, x] = halo.boundary.repeat_edge(in0)[c, y, x]
    s2 = halo.Func("s2")
    s2[c, y, x] = (((b1[c, y - 1, x] * 5) + (b1[c, y, x] * 6)) + (b1[c, y + 1, x] * 5))
    s6 = halo.Func("s6")
    r5 = halo.RDom((1, 3), name="r5")
    s6[c, y, x] = s2[c, y, x]
    s6[c, r5.x, x] = halo.max(s6[c, r5.x, x], s6[c, r5.x - 1, x])
    s8 = halo.Func("s8")
    r7 = halo.RDom((0, 2), (0, 2), name="r7")
    s8[c, y, x] = (halo.sum(halo.cast(halo.int32, s6[c, y * 2 + r7.x, x * 2 + r7.y])) // 4)

    x, xo1, xi2, c, ci1, y = halo.vars("x xo1 xi2 c ci1 y")
    s6.split(x, xo1, xi2, 4, tail='guard')
    s2.compute_at(s6, xo1)
    s2.split(c, c, ci1, 7, tail='round_up')
    s2.reorder(y, x, c, ci1)
    b1.compute_at(s2, ci1)
    b1.store_at(s6, y)

    rng = np.random.default_rng(31000369)
    inputs = {
        in0: rng.integers(0, 256, (1, 23, 9)).astype("uint8"),
    }
    got = s8.realize((1, 5, 3), inputs=inputs, origin=(0, -3, 5))
    want = halo.reference(s8, (1, 5, 3), inputs=inputs, origin=(0, -3, 5))
    np.testing.assert_array_equal(got, want)


if __name__ == "__main__":
    test_sliding_carried_over_a_loop_that_moves_the_inner_columns()
