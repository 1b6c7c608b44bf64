# ruff: noqa: E501 - the algorithm as the fuzzer wrote it, one definition a line
"""Open bug (crash): program 11000317 schedule 11000951 (legal), found by
`python -m halo.fuzz --pairs 1500 --seed 11 --jobs 2` (the worker died with "double free
or corruption" two cases later, at program 11000318 schedule 11000955).

Running this case a few times in one process corrupts the heap:
`MALLOC_CHECK_=3 python tests/fuzz/open_bugs/heap_corruption_fold_round_up.py` aborts
("double free or corruption"), and prints "survived" when fixed. The results compared
with the reference match, so something writes outside a buffer it owns. Suspects, from
dropping calls: s8 computed at s9's innermost loop but stored at s9's loop c (a sliding
window / folded buffer over serial loops) together with s8.split(y, y, yi1, 5,
tail='round_up') (the computed region rounds up past the folded size), and s3 computed
at s6.update(0)'s y with a specialization. A smaller stand-alone version of the s8/s9
part alone did not reproduce it.
"""
import numpy as np

import halo


def test_heap():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.float32, 3, "in0")
    w1 = halo.ImageParam(halo.float32, 4, "w1")
    b1 = halo.Func("b1")
    b1[c, y, x] = halo.boundary.mirror_image(in0)[c, y, x]
    s3 = halo.Func("s3")
    r2 = halo.RDom((-1, 3), (0, 1), name="r2")
    r2.where((r2.x + r2.y) % 2 == 0)
    s3[c, y, x] = 2.0
    s3[c, y, x] += (b1[c, y + r2.x, x + r2.y] * halo.cast(halo.float32, (r2.x - r2.y + 2)))
    s6 = halo.Func("s6")
    r5 = halo.RDom((0, 4), (0, 1), (0, 1), name="r5")
    s6[c, y, x] = 2.0
    s6[c, y, x] += (s3[r5.x, y + r5.y, x + r5.z] * w1[halo.clamp(c, 0, 3), r5.x, r5.y + 0, r5.z + 0])
    s7 = halo.Func("s7")
    s7[c, y, x] = (halo.tanh(s6[c, y, x]) * -1.5)
    s8 = halo.Func("s8")
    s8[c, y, x] = (((((s7[c, y, x - 2] * 3.75) + (s7[c, y, x - 1] * 3.75)) + (s7[c, y, x] * 0.5)) + (s7[c, y, x + 1] * 2.0)) + (s7[c, y, x + 2] * 0.5))
    s9 = halo.Func("s9")
    s9[c, y, x] = (((s8[c, y - 1, x] * -0.25) + (s8[c, y, x] * 1.0)) + (s8[c, y + 1, x] * -0.25))

    s9.tile('y', 'x', 'yo1', 'xo2', 'yi3', 'xi4', 3, 1, tail='guard')
    s8.compute_at(s9, 'xi4')
    s8.store_at(s9, 'c')
    s8.split('y', 'y', 'yi1', 5, tail='round_up')
    s8.tile('y', 'yi1', 'yo2', 'yi1o3', 'yi4', 'yi1i5', 1, 8, tail='shift_inwards')
    s7.compute_at(s9, 'c')
    s7.tile('c', 'y', 'co1', 'yo2', 'ci3', 'yi4', 5, 3, tail='guard')
    s6.compute_root()
    s6.reorder('x', 'c')
    s3.compute_at(s6.update(0), 'y')
    s3.store_root()
    s3.tile('c', 'x', 'co1', 'xo2', 'ci3', 'xi4', 7, 3)
    s3.parallel('y', 3)
    s3.update(0).unroll('r2.y')
    s3.update(0).specialize(w1.shape[0] % 8 == 0).vectorize('x', 8)
    b1.compute_at(s6.update(0), 'y')
    b1.fuse('y', 'x', 'yxf1')
    w1_global = w1.cache_read('global')
    w1_global.compute_root()

    rng = np.random.default_rng(11000317)
    inputs = {
        in0: (rng.integers(-32, 33, (4, 1, 1)) / 4).astype("float32"),
        w1: (rng.integers(-16, 17, (4, 4, 1, 1)) / 8).astype("float32"),
    }
    got = s9.realize((4, 2, 9), inputs=inputs, origin=(0, 0, 0))
    want = halo.reference(s9, (4, 2, 9), inputs=inputs, origin=(0, 0, 0))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0.091158625)


if __name__ == "__main__":
    for _ in range(6):
        test_heap()
    import gc
    gc.collect()
    print("survived")
