"""Found by `python -m halo.fuzz --target cuda --seed 20261127` (program 20261127000012,
schedule 20261127000036): an atomic update of a Func computed inside the thread loops
(`s12`, the thread's own array) was a CUDA atomic on local memory, and the launch failed
("unspecified launch failure"). A thread's own array is now updated without atomics."""
import numpy as np

import halo


def test_an_atomic_update_of_a_threads_own_array():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.int16, 3, "in0")
    w1 = halo.ImageParam(halo.int16, 4, "w1")
    b1 = halo.Func("b1")
    b1[c, y, x] = halo.boundary.mirror_image(in0)[c, y, x]
    s2 = halo.Func("s2")
    s2[c, y, x] = (((b1[c, y, x] + b1[c, y, x]) % b1[c, y, x]) + b1[c, y, x])
    s4 = halo.Func("s4")
    r3 = halo.RDom((0, 2), (0, 2), name="r3")
    s4[c, y, x] = (halo.sum(halo.cast(halo.int32, s2[c, y * 2 + r3.x, x * 2 + r3.y])) // 4)
    s5 = halo.Func("s5")
    s5[c, y, x] = ((halo.select(c < 4, s4[c, y, x], c) % s4[c, y, x]) & s4[c, y, x])
    s6 = halo.Func("s6")
    r7 = halo.RDom((0, 1), name="r7")
    s6[c, y, x] = halo.sum((s5[r7.x, y, x] * ((r7.x + 2 * c) % 3 - 1)))
    s8 = halo.Func("s8")
    s8[c, y, x] = s6[c, x, y]
    s10 = halo.Func("s10")
    r9 = halo.RDom((0, 1), (-1, 2), (-1, 2), name="r9")
    s10[c, y, x] = 1
    s10[c, y, x] += (s8[r9.x, y + r9.y, x + r9.z] * halo.cast(halo.int32, w1[halo.clamp(c, 0, 0), r9.x, r9.y + 1, r9.z + 1]))
    s12 = halo.Func("s12")
    r11 = halo.RDom((0, 2), (0, 7), name="r11")
    s12[y, x] = 0
    s12[r11.x // 2, r11.y] += s10[0, r11.x, r11.y]
    s14 = halo.Func("s14")
    r13 = halo.RDom((0, 1), (0, 5), name="r13")
    s14[y, x] = 0
    s14[r13.y, r13.x] += s12[r13.x, r13.y]

    y, x, yo1, xo2, yi3, xi4, r13xo1, r13xi2, xo1, xi2, c = halo.vars("y x yo1 xo2 yi3 xi4 r13xo1 r13xi2 xo1 xi2 c")
    s14.gpu_tile(y, x, yo1, xo2, yi3, xi4, 8, 3)
    s14.update(0).atomic()
    s14.update(0).split(r13.x, r13xo1, r13xi2, 32)
    s14.update(0).gpu_blocks(r13xo1)
    s14.update(0).gpu_threads(r13xi2)
    s12.compute_at(s14.update(0), r13xi2)
    s12.update(0).atomic()
    s10.gpu_tile(x, xo1, xi2, 32)
    s10.update(0).gpu_tile(y, x, yo1, xo2, yi3, xi4, 2, 1, tail='guard')
    s5.compute_root()
    s5.gpu_tile(x, xo1, xi2, 64, tail='shift_inwards')
    s4.compute_root()
    s4.split(x, xo1, xi2, 3, tail='round_up')
    s4.gpu_blocks(xo1)
    s2.compute_at(s4, c)
    s2.split(x, xo1, xi2, 28, tail='shift_inwards')
    s2.gpu_blocks(xo1)
    b1.compute_at(s2, y)
    b1.gpu_tile(y, x, yo1, xo2, yi3, xi4, 7, 4, tail='shift_inwards')

    rng = np.random.default_rng(20261127000012)
    inputs = {
        in0: rng.integers(-300, 301, (1, 3, 16)).astype("int16"),
        w1: rng.integers(-4, 5, (1, 1, 2, 2)).astype("int16"),
    }
    got = s14.realize((19, 16), inputs=inputs, origin=(0, 0), target='cuda')
    want = halo.reference(s14, (19, 16), inputs=inputs, origin=(0, 0))
    np.testing.assert_array_equal(got, want)


if __name__ == "__main__":
    test_an_atomic_update_of_a_threads_own_array()
