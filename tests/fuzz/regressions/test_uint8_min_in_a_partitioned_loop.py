"""partition_loops dropped a uint8 min: in `min((b1 % b2) - uint8(x), 5)` (b1 % b2 is 0,
both being the same image), it proved `0 - uint8(x) <= 5` from the comparison's slack
`5 - (0 - uint8(x))`, which is >= 0 only where subtraction doesn't wrap; in uint8 it does
(0 - 1 is 255), so the steady-state loop stored 255 where the answer was 5. Clamps and
guards are now partitioned only in index arithmetic (signed, 32 bits or more). Found by
`python -m halo.fuzz --pairs 10000 --seed 5 --jobs 16` (program 5002155 schedule
5006466)."""
import numpy as np

import halo


def test_uint8_min_in_a_partitioned_vector_loop():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.uint8, 2, "in0")
    b1 = halo.Func("b1")
    b1[y, x] = halo.boundary.mirror_image(in0)[y, x]
    b2 = halo.Func("b2")
    b2[y, x] = halo.boundary.mirror_image(in0)[y, x]
    s3 = halo.Func("s3")
    s3[y, x] = halo.min(((b1[y, x] % b2[y, x]) - halo.cast(halo.uint8, halo.clamp(x, 0, 255))), 5)

    s3.fuse('y', 'x', 'yxf1')
    s3.specialize(in0.shape[1] > 4).vectorize('yxf1', 2)

    rng = np.random.default_rng(5002155)
    inputs = {
        in0: rng.integers(0, 256, (17, 9)).astype("uint8"),
    }
    got = s3.realize((19, 9), inputs=inputs, origin=(0, 0))
    want = halo.reference(s3, (19, 9), inputs=inputs, origin=(0, 0))
    np.testing.assert_array_equal(got, want)


if __name__ == "__main__":
    test_uint8_min_in_a_partitioned_vector_loop()
