"""Found by `python -m halo.fuzz --target cuda --seed 20261205` (program 20261205000480,
schedule 20261205001442): a double-buffered Func (`s2`) whose producer computes a Func of
its own (`b1`, in shared memory at block level) and reads it at once. b1's stores of
global loads were made asynchronous copies too, so s2 read b1 before they landed (423 of
429 points wrong). Only the double-buffered Func's own stores are asynchronous now."""
import numpy as np

import halo


def test_a_double_buffered_producer_reads_its_own_producer_at_once():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.float32, 3, "in0")
    b1 = halo.Func("b1")
    b1[c, y, x] = halo.boundary.mirror_image(in0)[c, y, x]
    s2 = halo.Func("s2")
    s2[c, y, x] = b1[c, x, y]
    s3 = halo.Func("s3")
    s3[c, y, x] = halo.select(s2[c, y, x] < s2[c, y, x], s2[c, y, x], s2[c, y, x])

    x, xo1, xi2 = halo.vars("x xo1 xi2")
    s3.split(x, xo1, xi2, 4)
    s3.gpu_blocks(xo1)
    s2.compute_at(s3, xi2)
    s2.double_buffer(2)
    b1.compute_at(s2, x)

    rng = np.random.default_rng(20261205000480)
    inputs = {
        in0: (rng.integers(-32, 33, (3, 19, 17)) / 4).astype("float32"),
    }
    got = s3.realize((3, 13, 11), inputs=inputs, origin=(0, 0, 0), target='cuda')
    want = halo.reference(s3, (3, 13, 11), inputs=inputs, origin=(0, 0, 0))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-06)

