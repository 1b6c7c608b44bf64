# ruff: noqa: E501 - the algorithm as the fuzzer wrote it, one definition a line
"""A 12-stage pipeline with two cache_read copies: found by `python -m halo.fuzz`
(program 11000093, seed 11 campaign). Lowering wraps the loops in a few lets per Func and
dimension, and the box analysis of bounds inference took one Python frame per let of
the chain, so a few hundred lets ran out of recursion (RecursionError, a crash)."""
import numpy as np

import halo


def test_long_let_chain_in_bounds_inference():
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

    s14.update(0).tile('c', 'r13.x', 'co1', 'r13xo2', 'ci3', 'r13xi4', 3, 16, tail='guard')
    s12.compute_root()
    s11.compute_root()
    s7.compute_root()
    s6.compute_root()
    s4.compute_root()
    b2.compute_root()
    s4.cache_read('global')
    s7.cache_read('shared')

    rng = np.random.default_rng(11000093)
    inputs = {
        in0: (rng.integers(-32, 33, (3, 1, 16)) / 4).astype("float32"),
    }
    got = s18.realize((3, 16, 13), inputs=inputs, origin=(0, 0, 0))
    want = halo.reference(s18, (3, 16, 13), inputs=inputs, origin=(0, 0, 0))
    np.testing.assert_array_equal(got, want)

