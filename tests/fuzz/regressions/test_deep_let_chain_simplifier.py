# ruff: noqa: E501 - the algorithm as the fuzzer wrote it, one definition a line
"""internal: program 11000093 schedule 11000280 (legal), found by
`python -m halo.fuzz --seed 11`.

    RecursionError: maximum recursion depth exceeded

Lowering wraps the loops of this 12-stage pipeline (with two cache_read copies) in a
chain of a few hundred LetStmts, and the simplifier recursed once per let past Python's
default limit. Lowering, compilation and the reference now let the IR walkers recurse as
deep as the IR nests (`halo.ir.deep_stack.run_deep`)."""
import numpy as np

import halo


def test_deep_let_chain_simplifies():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.float32, 3, "in0")
    b2 = halo.Func("b2")
    b2[c, y, x] = halo.boundary.mirror_interior(in0)[c, y, x]
    s3 = halo.Func("s3")
    s3[c, y, x] = halo.cast(halo.uint8, halo.clamp(b2[c, y, x], 0.0, 255.0))
    s4 = halo.Func("s4")
    s4[c, y, x] = (((halo.cast(halo.int32, s3[c, y, x - 1]) * 2) + (halo.cast(halo.int32, s3[c, y, x]) * 8)) + (halo.cast(halo.int32, s3[c, y, x + 1]) * -4))
    s6 = halo.Func("s6")
    r5 = halo.RDom((-1, 3), (0, 1), name="r5")
    s6[c, y, x] = halo.sum(s4[c, y + r5.x, x + r5.y] * (r5.x - r5.y + 2))
    s7 = halo.Func("s7")
    s7[c, y, x] = halo.cast(halo.float32, s6[c, y, x])
    s11 = halo.Func("s11")
    r10 = halo.RDom((0, 2), (0, 2), name="r10")
    s11[c, y, x] = halo.maximum(s7[c, y * 2 + r10.x, x * 2 + r10.y])
    s12 = halo.Func("s12")
    s12[c, y, x] = halo.cast(halo.int16, halo.clamp(s11[c, y, x], -32768.0, 32767.0))
    s14 = halo.Func("s14")
    r13 = halo.RDom((1, 12), name="r13")
    s14[c, y, x] = s12[c, y, x]
    s14[c, y, r13.x] = halo.max(s14[c, y, r13.x], s14[c, y, r13.x - 1])
    s16 = halo.Func("s16")
    r15 = halo.RDom((0, 1), (0, 1), name="r15")
    s16[c, y, x] = -5
    s16[c, y, x] += (halo.cast(halo.int32, s14[c, y + r15.x, x + r15.y]) * (r15.x - r15.y + 2))
    s18 = halo.Func("s18")
    s18[c, y, x] = (((s16[c, y, x - 1] * -5) + (s16[c, y, x] * 9)) + (s16[c, y, x + 1] * -5))

    s18.split('y', 'yo1', 'yi2', 7, tail='guard')
    s16.compute_root()
    s16.store_root()
    s16.fuse('c', 'y', 'cyf1')
    s16.tile('cyf1', 'x', 'cyf1o2', 'xo3', 'cyf1i4', 'xi5', 4, 5, tail='guard')
    s16_rf = s16.update(0).rfactor('r15.y', 'u1', name='s16_rf')
    s16.update(0).split('c', 'co2', 'ci3', 8, tail='auto')
    s16_rf.compute_at(s16.update(0), 'r15.y')
    s16_rf.tile('c', 'y', 'co1', 'yo2', 'ci3', 'yi4', 16, 1, tail='shift_inwards')
    s16_rf.specialize(in0.shape[2] % 8 == 0).vectorize('ci3', 3)
    s14.compute_at(s16_rf.update(0), 'x')
    s14.store_root()
    s14.store_in('global')
    s14.split('y', 'yo1', 'yi2', 8, tail='auto')
    s14.update(0).reorder('c', 'y')
    s14.update(0).tile('c', 'r13.x', 'co1', 'r13xo2', 'ci3', 'r13xi4', 3, 16, tail='guard')
    s12.compute_root()
    s11.compute_root()
    s7.compute_root()
    s7.split('x', 'x', 'xi1', 8, tail='round_up')
    s7.parallel('xi1', 2)
    s6.compute_root()
    s6_global = s6.cache_write('global')
    s6_global.compute_at(s6, 'c')
    s6_global.fuse('y', 'x', 'yxf1')
    s6_global.reorder('yxf1', 'c')
    s4.compute_root()
    s3.compute_at(s4, 'x')
    s3.parallel('y')
    s3.fuse('c', 'y', 'cyf1')
    b2.compute_root()
    b2.parallel('x')
    b2.fuse('y', 'x', 'yxf1')
    s4_global = s4.cache_read('global')
    s4_global.compute_root()
    s7_shared = s7.cache_read('shared')
    s7_shared.compute_root()

    rng = np.random.default_rng(11000093)
    inputs = {
        in0: (rng.integers(-32, 33, (3, 1, 16)) / 4).astype("float32"),
    }
    got = s18.realize((3, 16, 13), inputs=inputs, origin=(0, 0, 0))
    want = halo.reference(s18, (3, 16, 13), inputs=inputs, origin=(0, 0, 0))
    np.testing.assert_array_equal(got, want)


