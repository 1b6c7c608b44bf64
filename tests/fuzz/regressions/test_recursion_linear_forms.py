"""internal: program 1002812 schedule 1008436 (legal), found by `python -m halo.fuzz`.

    RecursionError: maximum recursion depth exceeded while calling a Python object

Lowering, compilation and the reference now let the IR walkers recurse as deep as the IR
nests (`halo.ir.deep_stack.run_deep`).
"""
import numpy as np

import halo


def test_internal_recursion_linear_forms():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.int32, 2, "in0")
    w1 = halo.ImageParam(halo.int16, 4, "w1")
    b1 = halo.Func("b1")
    b1[y, x] = halo.boundary.mirror_image(in0)[y, x]
    s2 = halo.Func("s2")
    s2[y, x] = halo.cast(halo.float32, b1[y, x])
    s4 = halo.Func("s4")
    r3 = halo.RDom((1, 11), name="r3")
    s4[y, x] = s2[y, x]
    s4[r3.x, x] = halo.max(s4[r3.x, x], s4[r3.x - 1, x])
    s5 = halo.Func("s5")
    s5[y, x] = s4[x, y]
    b6 = halo.Func("b6")
    b6[y, x] = halo.boundary.mirror_image(in0)[y, x]
    s8 = halo.Func("s8")
    r7 = halo.RDom((0, 1), name="r7")
    s8[y, x] = 0
    s8[y, halo.clamp(b6[y, r7.x] // 31, 0, 5)] += 1
    s9 = halo.Func("s9")
    s9[y, x] = in0[halo.clamp(s8[y, x], 0, in0.shape[0] - 1), halo.clamp(x, 0, in0.shape[1] - 1)]
    s10 = halo.Func("s10")
    s10[c, y, x] = halo.select(c == 0, s9[y, x], (s9[y, x] * (c + 1)))
    s11 = halo.Func("s11")
    s11[c, y, x] = halo.cast(halo.uint8, halo.clamp(s10[c, y, x], 0, 255))
    s13 = halo.Func("s13")
    r12 = halo.RDom((0, 1), (-1, 3), name="r12")
    s13[c, y, x] = halo.maximum(halo.cast(halo.int16, s11[c, y + r12.x, x + r12.y]) * halo.cast(halo.int16, (r12.x - r12.y + 2)))
    s14 = halo.Func("s14")
    s14[c, y, x] = (halo.min(halo.min(s13[c, y, x], 3), s13[c, y, x]) * halo.cast(halo.int16, halo.clamp(s5[y, x], -32768.0, 32767.0)))
    s15 = halo.Func("s15")
    s15[c, y, x] = s14[c, x, y]
    s17 = halo.Func("s17")
    r16 = halo.RDom((1, 4), name="r16")
    s17[c, y, x] = s15[c, y, x]
    s17[c, r16.x, x] = s17[c, r16.x, x] + s17[c, r16.x - 1, x]
    s18 = halo.Func("s18")
    s18[c, y, x] = s17[c, y, x + halo.clamp(halo.cast(halo.int32, s17[c, y, x]) % 5, 0, 4) - 2]
    s20 = halo.Func("s20")
    r19 = halo.RDom((0, 4), (-1, 2), (-1, 2), name="r19")
    s20[c, y, x] = -5
    s20[c, y, x] += (halo.cast(halo.int32, s18[r19.x, y + r19.y, x + r19.z]) * halo.cast(halo.int32, w1[halo.clamp(c, 0, 3), r19.x, r19.y + 1, r19.z + 1]))

    s20.split('c', 'co1', 'ci2', 5, tail='shift_inwards')
    s20.update(0).parallel('y')
    s18.compute_root()
    s17.compute_root()
    s17.store_root()
    s17.vectorize('x', 4)
    s17.split('x_vec', 'x_veco1', 'x_veci2', 16, tail='round_up')
    s17.update(0).fuse('x', 'r16.x', 'xr16xf1')
    s17.update(0).fuse('c', 'xr16xf1', 'cxr16xf1f2')
    s14.compute_at(s17, 'x_veco1')
    s14.vectorize('c', 2)
    s14.reorder('x', 'c_vec', 'c')
    s13.compute_at(s17, 'x')
    s13.tile('c', 'y', 'co1', 'yo2', 'ci3', 'yi4', 3, 5, tail='shift_inwards')
    s11.compute_root()
    s11.store_root()
    s11.store_in('global')
    s11.reorder('x', 'c', 'y')
    s10.compute_root()
    s10.split('c', 'co1', 'ci2', 1, tail='round_up')
    s9.compute_root()
    s9.fuse('y', 'x', 'yxf1')
    s9.parallel('yxf1')
    s8.compute_root()
    s8.store_root()
    b6.compute_root()
    b6.parallel('x')
    b6.split('x', 'x', 'xi1', 7, tail='round_up')
    s5.compute_at(s14, 'c')
    s5.split('x', 'xo1', 'xi2', 4, tail='auto')
    s4.compute_at(s5, 'xo1')
    s4.fuse('y', 'x', 'yxf1')
    s4.parallel('yxf1')
    s4.update(0).fuse('x', 'r3.x', 'xr3xf1')
    s2.compute_at(s5, 'xo1')
    s2.store_at(s5, 'xo1')
    s2.fuse('y', 'x', 'yxf1')
    s2.split('yxf1', 'yxf1o2', 'yxf1i3', 5, tail='guard')
    b1.compute_root()
    b1.store_in('global')
    b1.reorder('x', 'y')
    b1.split('y', 'yo1', 'yi2', 7)

    rng = np.random.default_rng(1002812)
    inputs = {
        in0: rng.integers(-1000, 1001, (13, 7)).astype("int32"),
        w1: rng.integers(-4, 5, (4, 4, 2, 2)).astype("int16"),
    }
    got = s20.realize((4, 19, 16), inputs=inputs, origin=(0, 0, 0))
    want = halo.reference(s20, (4, 19, 16), inputs=inputs, origin=(0, 0, 0))
    np.testing.assert_array_equal(got, want)


