"""A Func computed in its consumer's innermost loop `y` and stored at the root computed
wrong values (found by `python -m halo.fuzz --seed 2614`: program 2614001647, schedule
2614004942). The consumer's split of x gives two copies of the Func's produce, a
whole-tile nest and a tail nest, and each chose its own sliding loop: the whole-tile
copy slid along `xi` (columns), the tail copy along `y` (a window of one row). Storage
folding read one window per Func, the last copy's, and folded the rows to one, though
the whole-tile copy relied on every row staying stored across `xi`. Folding now
requires every produce inside the Realize to have slid along one dimension
(test_storage_folding.py has the same class under a parallel specialization); sliding
now also prefers the innermost loop with a window in both copies.

    15 of 38 points differ; first at (0, 1): got np.float32(0.98717946), reference
    np.float32(0.9714286)
"""
import numpy as np

import halo


def test_sliding_along_a_loop_around_the_compute_loop():
    y, x, xi = halo.vars("y x xi")
    inp = halo.ImageParam(halo.int32, 2, "inp")
    g = halo.Func("g")
    g[y, x] = inp[y, x] * 2
    f = halo.Func("f")
    f[y, x] = g[y, x - 1] + g[y, x + 1]
    f.split(x, x, xi, 2).reorder(x, xi, y)
    g.compute_at(f, y).store_root()

    inputs = {inp: np.arange(5 * 9, dtype=np.int32).reshape(5, 9)}
    got = f.realize((3, 5), inputs=inputs, origin=(1, 1))
    want = halo.reference(f, (3, 5), inputs=inputs, origin=(1, 1))
    np.testing.assert_array_equal(got, want)


if __name__ == "__main__":
    test_sliding_along_a_loop_around_the_compute_loop()
