"""A legal schedule was refused with a false BoundsError: `s7.specialize(in0.shape[0] ==
12)` substitutes 12 for `in0.extent.0` in its branch, so the clamped gather there reads
rows up to 11. The root `cache_read` of in0 (`in0_global`) covered the union of both
branches' reads, and copying row 11 of an 11-row input failed the input check. A branch
whose condition is the same throughout (no variable in scope) now gives
`select(condition, then's region, else's)`, in boxes (halo/analysis/boxes.py) and in the
intervals of lets (halo/analysis/interval.py). Found by `python -m halo.fuzz --pairs 10000
--seed 3` (program 3001757 schedule 3005273).
"""
import numpy as np

import halo


def test_specialized_extent_in_a_root_region():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.int32, 2, "in0")
    b1 = halo.Func("b1")
    b1[y, x] = halo.boundary.mirror_image(in0)[y, x]
    s2 = halo.Func("s2")
    s2[y, x] = halo.boundary.repeat_edge(b1, bounds=[(0, 17), (0, 11)])[y, x]
    s7 = halo.Func("s7")
    s7[y, x] = in0[halo.clamp(s2[y, x], 0, in0.shape[0] - 1), halo.clamp(x, 0, in0.shape[1] - 1)]
    s9 = halo.Func("s9")
    s9[y, x] = halo.cast(halo.int16, s7[y, x])

    s9.split('y', 'yo1', 'yi2', 8, tail='guard')
    s7.compute_root()
    s7.tile('y', 'x', 'yo1', 'xo2', 'yi3', 'xi4', 7, 7, tail='shift_inwards')
    s7.specialize(in0.shape[0] == 12).parallel('yo1')
    s2.compute_inline()
    b1.compute_root()
    b1.store_root()
    b1.fuse('y', 'x', 'yxf1')
    b1_global = b1.cache_read('global')
    b1_global.compute_root()
    in0_global = in0.cache_read('global', readers=[s7])
    in0_global.compute_root()

    rng = np.random.default_rng(3001757)
    inputs = {
        in0: rng.integers(-1000, 1001, (11, 3)).astype("int32"),
    }
    got = s9.realize((6, 5), inputs=inputs, origin=(4, 0))
    want = halo.reference(s9, (6, 5), inputs=inputs, origin=(4, 0))
    np.testing.assert_array_equal(got, want)


if __name__ == "__main__":
    test_specialized_extent_in_a_root_region()
