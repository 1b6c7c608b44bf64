"""partition_loops looks for a vectorized loop's guards under the loops inside it; one of
those (s9's, computed inside s11's vector loop c_vec) had a range that moved with c_vec,
and interval arithmetic left c_vec in the hoisted condition: "lowered code uses undefined
names ['s11.s0.c.c_vec']" (found by `python -m halo.fuzz`, program 20261124000016
schedule 20261124000049, illegal: bound_too_small). Loops whose range moves with the
loops around them are not looked into."""
import numpy as np

import halo


def test_guard_under_a_loop_whose_range_moves_with_the_vector():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.int32, 3, "in0")
    in1 = halo.ImageParam(halo.int16, 2, "in1")
    b1 = halo.Func("b1")
    b1[c, y, x] = halo.boundary.repeat_edge(in0)[c, y, x]
    s2 = halo.Func("s2")
    s2[c, y, x] = halo.boundary.mirror_interior(b1, bounds=[(0, 2), (0, 1), (0, 11)])[c, y, x]
    s4 = halo.Func("s4")
    r3 = halo.RDom((-1, 2), (-1, 2), name="r3")
    r3.where((r3.x + r3.y) % 2 == 0)
    s4[c, y, x] = 2
    s4[c, y, x] += (s2[c, y + r3.x, x + r3.y] * (r3.x - r3.y + 2))
    s5 = halo.Func("s5")
    s5[c, y, x] = (((((s4[c, y, x - 2] * 5) + (s4[c, y, x - 1] * -3)) + (s4[c, y, x] * 4)) + (s4[c, y, x + 1] * 8)) + (s4[c, y, x + 2] * 2))
    s8 = halo.Func("s8")
    s8[c, y, x] = halo.boundary.mirror_interior(s5, bounds=[(0, 2), (0, 2), (0, 9)])[c, y, x]
    b10 = halo.Func("b10")
    b10[y, x] = halo.boundary.constant_exterior(in1, 0)[y, x]
    s9 = halo.Func("s9")
    s9[c, y, x] = s8[c, y, x + halo.clamp(halo.cast(halo.int32, b10[y, x]) % 5, 0, 4) - 2]
    s11 = halo.Func("s11")
    s11[c, y, x] = (halo.max(halo.cast(halo.float32, s9[c, y, x]), halo.cast(halo.float32, y)) + -1.5)
    s12 = halo.Func("s12")
    s12[c, y, x] = s11[c, y // 2, x // 2]
    s13 = halo.Func("s13")
    s13[c, y, x] = (halo.abs(s12[c, y, x]) * 1.0)

    c, y, c_vec, x, co1, xo2, ci3, xi4, yo5, yi6, u1, cyf1 = halo.vars("c y c_vec x co1 xo2 ci3 xi4 yo5 yi6 u1 cyf1")
    s13.specialize((in0.shape[0] >= 4) & (in0.shape[0] % 2 == 1)).vectorize(c, 8)
    s13.specialize((in0.shape[0] >= 4) & (in0.shape[0] % 2 == 1)).reorder(y, c_vec, c, x)
    s12.compute_root()
    s12.unroll(y, 3)
    s11.compute_root()
    s11.store_root()
    s11.vectorize(c, 2)
    s11.vectorize(y, 3)
    s9.compute_at(s11, y)
    s9.store_at(s11, c_vec)
    s9.tile(c, x, co1, xo2, ci3, xi4, 16, 7, tail='guard')
    s9.split(y, yo5, yi6, 2, tail='round_up')
    b10.compute_at(s9, co1)
    b10.store_at(s11, y)
    s8.compute_root()
    s8.store_root()
    s5.compute_inline()
    s4.compute_root()
    s4.unroll(c, 4)
    s4_rf = s4.update(0).rfactor(r3.y, u1, name='s4_rf')
    s4.update(0).reorder(x, r3.y, y)
    s4_rf.compute_root()
    s4_rf.reorder(x, y)
    s4_rf.vectorize(c, 2)
    s2.compute_root()
    s2.fuse(c, y, cyf1)

    rng = np.random.default_rng(20261124000016)
    inputs = {
        in0: rng.integers(-1000, 1001, (2, 23, 11)).astype("int32"),
        in1: rng.integers(-300, 301, (7, 6)).astype("int16"),
    }
    try:
        s13.bound(y, 0, 6)
        s13.realize((2, 7, 3), inputs=inputs, origin=(0, 0, 0))
    except halo.HaloError:
        return
    raise AssertionError("the illegal call (bound_too_small) was accepted")


if __name__ == "__main__":
    test_guard_under_a_loop_whose_range_moves_with_the_vector()

