"""rfactor after a split that gives its outer loop the name of the reduction variable
it splits (split(r.x, r.x, rxi, 3)): found by `python -m halo.fuzz` (program 16). The
split's value of r.x is written over a loop also called r.x, and rfactor substituted
it into itself forever (RecursionError)."""
import numpy as np
import pytest

import halo


@pytest.mark.parametrize("k, factor", [(7, 3), (6, 3), (1, 2), (5, 5)])
def test_rfactor_after_split_keeping_the_name(k, factor):
    y, x = halo.vars("y x")
    a = halo.ImageParam(halo.int32, 2, "a")
    b = halo.ImageParam(halo.int32, 2, "b")
    r = halo.RDom((0, k), name="r")
    f = halo.Func("f")
    f[y, x] = 0
    f[y, x] += a[y, r.x] * b[r.x, x]
    f.update(0).split("r.x", "r.x", "rxi", factor)
    intm = f.update(0).rfactor("rxi", "u", name="f_rf")
    intm.compute_root()
    rng = np.random.default_rng(1)
    inputs = {a: rng.integers(-9, 10, (5, k)).astype("int32"),
              b: rng.integers(-9, 10, (k, 7)).astype("int32")}
    got = f.realize((5, 7), inputs=inputs)
    want = halo.reference(f, (5, 7), inputs=inputs)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, inputs[a] @ inputs[b])
