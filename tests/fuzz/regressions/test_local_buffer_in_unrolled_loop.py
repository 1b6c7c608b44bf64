"""A "local" buffer computed at an unrolled loop whose consumer's region is smaller than
the unroll factor: found by `python -m halo.fuzz` (program 95). The shifted tail makes
the producer's region x_unroll - 1 wide in the copies of the unrolled loop, which is at
most 1, but halo refused the legal schedule because it bounded the extent without the
range of the loop index."""
import numpy as np
import pytest

import halo


@pytest.mark.parametrize("read_x, factor, width", [(True, 3, 7), (True, 5, 2),
                                                   (False, 3, 7), (False, 2, 1)])
def test_local_buffer_at_unrolled_loop(read_x, factor, width):
    c, y, x = halo.vars("c y x")
    inp = halo.ImageParam(halo.float32, 3, "inp")
    g = halo.Func("g")
    g[c, y, x] = inp[c, y, x] * 2.0 + halo.cast(halo.float32, x)
    f = halo.Func("f")
    f[c, y, x] = g[c, y, x] + 1.0
    out = halo.Func("out")
    out[y, x] = f[1, y, x] if read_x else f[0, y, 0] - halo.cast(halo.float32, x)
    f.compute_root()
    f.unroll(x, factor)
    g.compute_at(f, "x_unroll")
    g.store_in("local")
    data = np.random.default_rng(3).integers(-9, 10, (3, 5, max(width, 1))).astype("float32")
    got = out.realize((5, width), inputs={inp: data})
    want = halo.reference(out, (5, width), inputs={inp: data})
    np.testing.assert_array_equal(got, want)
