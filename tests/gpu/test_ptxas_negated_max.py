"""Integer maxima over windows with a negative weight, where ptxas dropped the negation
(`halo/backends/cuda/ptx_rewrites.py`): found by `python -m halo.fuzz --target cuda --seed
20261128` (programs 20261128001929 and 20261128000361, wrong at 151 of 624 and 2 of 437
points)."""
import numpy as np

import halo
from tests.backends.cuda.test_ptx_rewrites import negated_window_max


def test_a_window_max_with_a_negative_weight():
    out, inp = negated_window_max()
    a = np.random.default_rng(20261128001929).integers(-1000, 1001, (3, 23, 7)).astype("int32")
    got = out.realize((3, 16, 13), inputs={inp: a}, target="cuda")
    np.testing.assert_array_equal(got, halo.reference(out, (3, 16, 13), inputs={inp: a}))


def test_a_histogram_weighted_in_a_window():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.int32, 3, "in0")
    b1 = halo.Func("b1")
    b1[c, y, x] = halo.boundary.constant_exterior(in0, 7)[c, y, x]
    s3 = halo.Func("s3")
    r2 = halo.RDom((0, 3), name="r2")
    s3[y, x] = 0
    s3[y, b1[0, y, r2.x] % 19] += 1
    s9 = halo.Func("s9")
    r8 = halo.RDom((-1, 3), (-2, 5), name="r8")
    s9[y, x] = halo.maximum(s3[y + r8.x, x + r8.y] * (r8.x - r8.y + 2))
    y, yo, yi = halo.vars("y yo yi")
    s9.gpu_blocks(x)
    s3.split(y, yo, yi, 14, tail="guard").gpu_blocks(yo)
    s3.update(0).gpu_blocks(y)
    inputs = {in0: np.random.default_rng(20261128000361).integers(
        -1000, 1001, (3, 5, 9)).astype("int32")}
    got = s9.realize((19, 23), inputs=inputs, origin=(1, 4), target="cuda")
    np.testing.assert_array_equal(
        got, halo.reference(s9, (19, 23), inputs=inputs, origin=(1, 4)))
