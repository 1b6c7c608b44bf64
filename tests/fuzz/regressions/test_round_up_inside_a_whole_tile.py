"""A round_up split inside a whole tile wrote past a producer's heap allocation. s7's
`vectorize(y, 4)` is a shift_inwards split, so s7 got a whole-tile nest (s4 is computed
inside it), where `y` is rebuilt unclamped; then `y_vec` (extent 4) is split by 7 with
round_up, which computes 3 rows past each tile: past the region for the last tile. The
clamped nest clamps `y` back into range, and region analysis reads only the clamped nest,
so s7 read, and s4 computed, rows past s4's storage (heap corruption, "free(): invalid
next size"). A stage with a round_up split in it, or in a Func computed inside it, now
has no whole-tile nest (schedule_functions._tiled_loops). Found by `python -m halo.fuzz
--pairs 10000 --seed 4 --jobs 16` (program 4002049 schedule 4006147, a segfault). Run in a
child process: the overrun corrupts the heap."""

import numpy as np

import halo
from tests.fuzz.regressions.child_process import assert_survives_in_a_child


def _run():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.int32, 3, "in0")
    b1 = halo.Func("b1")
    b1[c, y, x] = halo.boundary.repeat_image(in0)[c, y, x]
    s2 = halo.Func("s2")
    s2[c, y, x] = halo.min((b1[c, y, x] - x), b1[c, y, x])
    s3 = halo.Func("s3")
    s3[c, y, x] = s2[c, y // 2, x]
    s4 = halo.Func("s4")
    s4[c, y, x] = (halo.clamp((halo.cast(halo.float32, s3[c, y, x]) / (halo.abs(halo.cast(halo.float32, s3[c, y, x])) + 1.0)), -1000.0, 1000.0) * halo.clamp(halo.cast(halo.float32, c), -1000.0, 1000.0))
    s5 = halo.Func("s5")
    s5[c, y, x] = halo.select(y < 7, s4[c, y, x], halo.cast(halo.float32, s2[c, y, x]))
    s7 = halo.Func("s7")
    s7[c, y, x] = s5[c, y, x + halo.clamp(s3[c, y, x] % 5, 0, 4) - 2]
    s8 = halo.Func("s8")
    s8[c, y, x] = (halo.pow(halo.min(halo.abs(s7[c, y, x]), 30.0) + 1.0, 1.5) + 2.0)
    s9 = halo.Func("s9")
    s9[c, y, x] = halo.min(s8[c, y, x], 2.0)
    s10 = halo.Func("s10")
    s10[c, y, x] = ((((((((s9[c, y - 1, x - 1] * 2.0) + (s9[c, y + 1, x + 1] * 2.0)) + (s9[c, y - 1, x + 1] * 0.5)) + (s9[c, y, x + 1] * -0.25)) + (s9[c, y, x - 1] * 0.5)) + (s9[c, y + 1, x] * -0.25)) + (s9[c, y, x] * 2.0)) + (s9[c, y + 1, x - 1] * 0.5))

    s10.bound('c', 0, 2)
    s10.bound('x', 0, 7)
    s7.compute_at(s10, 'c')
    s7.vectorize('y', 4)
    s7.split('y_vec', 'y_veco1', 'y_veci2', 7, tail='round_up')
    s4.compute_at(s7, 'y')
    s4.store_at(s10, 'c')
    s2.compute_root()

    rng = np.random.default_rng(4002049)
    inputs = {
        in0: rng.integers(-1000, 1001, (2, 1, 2)).astype("int32"),
    }
    got = s10.realize((2, 11, 7), inputs=inputs, origin=(0, 0, 0))
    want = halo.reference(s10, (2, 11, 7), inputs=inputs, origin=(0, 0, 0))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-3)


def test_round_up_inside_a_whole_tile_stays_in_the_producer():
    assert_survives_in_a_child("test_round_up_inside_a_whole_tile")
