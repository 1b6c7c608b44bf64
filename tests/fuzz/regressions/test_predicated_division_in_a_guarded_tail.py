"""LLVM's loop vectorizer if-converted the guarded copy of b1's loop (16-wide, shift_inwards
over 6 columns): it predicated the division recovering c and y from the fused loop, then
took their loop-invariant values from lane 0 of the vector, a disabled lane (the tail
starts 10 columns left of the image), so the masked store went to a garbage address and
s3 read memory never written (found by `python -m halo.fuzz --pairs 10000 --seed 3
--jobs 16`, program 3000542 schedule 3001627, and 3000777 / 3002332 alike; failing or not
with the heap's addresses). halo now keeps LLVM from if-converting loops
(halo/backends/llvm/jit.py)."""
import numpy as np

import halo


def test_guarded_tail_of_a_fused_producer():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.float32, 3, "in0")
    w1 = halo.ImageParam(halo.int16, 4, "w1")
    b1 = halo.Func("b1")
    b1[c, y, x] = halo.boundary.constant_exterior(in0, -0.25)[c, y, x]
    s3 = halo.Func("s3")
    r2 = halo.RDom((0, 4), (0, 1), (0, 1), name="r2")
    s3[c, y, x] = 2.0
    s3[c, y, x] += (b1[r2.x, y + r2.y, x + r2.z] * halo.cast(halo.float32, w1[halo.clamp(c, 0, 3), r2.x, r2.y + 0, r2.z + 0]))

    b1.compute_root()
    b1.fuse('c', 'y', 'cyf1')
    b1.split('x', 'x', 'xi2', 16, tail='shift_inwards')

    rng = np.random.default_rng(3000542)
    inputs = {
        in0: (rng.integers(-32, 33, (4, 23, 13)) / 4).astype("float32"),
        w1: rng.integers(-4, 5, (4, 4, 1, 1)).astype("int16"),
    }
    got = s3.realize((4, 3, 6), inputs=inputs, origin=(0, 3, 4))
    want = halo.reference(s3, (4, 3, 6), inputs=inputs, origin=(0, 3, 4))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-06)


if __name__ == "__main__":
    test_guarded_tail_of_a_fused_producer()
