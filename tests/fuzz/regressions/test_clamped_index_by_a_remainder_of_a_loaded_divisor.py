"""An input read at a clamped index, `inp[clamp(v % int32(sizes[x]), 0, n - 1)]`, was
refused as unbounded (found by `python -m halo.fuzz --seed 2614`: program 2614001813,
schedule 2614005441, rejected with a BoundsError). The simplifier knows that floor
modulo by a value in [0, 255] lies in [0, 254], so it drops the clamp's `max(.., 0)`;
the interval analysis, which simplifies before bounding, knew nothing of a remainder by
a divisor that may be 0, and found the index unbounded below. It now bounds a remainder
by any divisor (and products and quotients with one side unbounded, and bitwise ands)
as the simplifier's constant bounds do.

    BoundsError: can't bound where input in1 is read in dimension 0: an index there
    (min(max(select(1 == 0, ...) % int32(in1[...]), ...), 0), in1.extent.0 - 1)) is
    data-dependent or unbounded
"""
import numpy as np

import halo


def test_clamped_index_by_a_remainder_of_a_loaded_divisor():
    x = halo.Var("x")
    values = halo.ImageParam(halo.int32, 1, "values")
    sizes = halo.ImageParam(halo.uint8, 1, "sizes")
    f = halo.Func("f")
    f[x] = values[halo.clamp(values[x] % halo.cast(halo.int32, sizes[x]), 0,
                             values.shape[0] - 1)]

    inputs = {values: np.array([-7, 3, 11, -2, 6, 0, 9], dtype=np.int32),
              sizes: np.array([0, 1, 4, 255, 3, 7, 2], dtype=np.uint8)}
    got = f.realize((7,), inputs=inputs)
    want = halo.reference(f, (7,), inputs=inputs)
    np.testing.assert_array_equal(got, want)


def test_clamped_index_by_a_remainder_of_a_loaded_divisor_as_drawn():
    """The drawn pipeline, shrunk: a Func's remainder, scaled, indexes an input."""
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.int16, 2, "in0")
    in1 = halo.ImageParam(halo.uint8, 2, "in1")
    s3 = halo.Func("s3")
    s3[y, x] = halo.cast(halo.int32, in0[y, x]) % halo.cast(halo.int32, in1[y, x])
    s4 = halo.Func("s4")
    s4[c, y, x] = halo.select(c == 0, s3[y, x], s3[y, x] * (c + 1))
    s5 = halo.Func("s5")
    s5[y, x] = in1[halo.clamp(s4[1, y, x], 0, in1.shape[0] - 1), x]

    rng = np.random.default_rng(2614001813)
    inputs = {in0: rng.integers(-300, 301, (3, 5)).astype("int16"),
              in1: rng.integers(0, 256, (3, 5)).astype("uint8")}
    got = s5.realize((3, 5), inputs=inputs)
    want = halo.reference(s5, (3, 5), inputs=inputs)
    np.testing.assert_array_equal(got, want)


if __name__ == "__main__":
    test_clamped_index_by_a_remainder_of_a_loaded_divisor()
    test_clamped_index_by_a_remainder_of_a_loaded_divisor_as_drawn()
