"""rejected: program 3001757 schedule 3005273 (legal), found by `python -m halo.fuzz`.

    BoundsError: input in0 is accessed at [0, 11] in dimension 0 (outermost is 0), but only
    [0, 10] exists (extent 11); pass a larger array, shrink the output, or read it through a
    boundary condition (halo.boundary.repeat_edge)
"""
import numpy as np

import halo


def test_rejected_3001757_3005273():
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
    test_rejected_3001757_3005273()
