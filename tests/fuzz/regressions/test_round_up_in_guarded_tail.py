"""A round_up split on a Func computed inside a consumer's guarded tile tail wrote past
its allocation: the tail iterations compute a region whose end the consumer's promised
range doesn't bound (found by `python -m halo.fuzz --pairs 1500 --seed 11`, program
11000317 schedule 11000951, as heap corruption). The script runs in a child process with
glibc's heap checks on, so an overrun aborts it."""

import numpy as np

import halo
from tests.fuzz.regressions.child_process import assert_survives_in_a_child


def _run():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.float32, 3, "in0")
    w1 = halo.ImageParam(halo.float32, 4, "w1")
    b1 = halo.Func("b1")
    b1[c, y, x] = halo.boundary.mirror_image(in0)[c, y, x]
    s3 = halo.Func("s3")
    r2 = halo.RDom((-1, 3), (0, 1), name="r2")
    r2.where((r2.x + r2.y) % 2 == 0)
    s3[c, y, x] = 2.0
    s3[c, y, x] += (b1[c, y + r2.x, x + r2.y] * halo.cast(halo.float32, (r2.x - r2.y + 2)))
    s6 = halo.Func("s6")
    r5 = halo.RDom((0, 4), (0, 1), (0, 1), name="r5")
    s6[c, y, x] = 2.0
    s6[c, y, x] += (s3[r5.x, y + r5.y, x + r5.z] * w1[halo.clamp(c, 0, 3), r5.x, r5.y + 0, r5.z + 0])
    s7 = halo.Func("s7")
    s7[c, y, x] = (halo.tanh(s6[c, y, x]) * -1.5)
    s8 = halo.Func("s8")
    s8[c, y, x] = (((((s7[c, y, x - 2] * 3.75) + (s7[c, y, x - 1] * 3.75)) + (s7[c, y, x] * 0.5)) + (s7[c, y, x + 1] * 2.0)) + (s7[c, y, x + 2] * 0.5))
    s9 = halo.Func("s9")
    s9[c, y, x] = (((s8[c, y - 1, x] * -0.25) + (s8[c, y, x] * 1.0)) + (s8[c, y + 1, x] * -0.25))

    s9.tile('y', 'x', 'yo1', 'xo2', 'yi3', 'xi4', 3, 1, tail='guard')
    s8.compute_at(s9, 'xi4')
    s8.store_at(s9, 'c')
    s8.split('y', 'y', 'yi1', 5, tail='round_up')

    rng = np.random.default_rng(11000317)
    inputs = {
        in0: (rng.integers(-32, 33, (4, 1, 1)) / 4).astype("float32"),
        w1: (rng.integers(-16, 17, (4, 4, 1, 1)) / 8).astype("float32"),
    }
    got = s9.realize((4, 2, 9), inputs=inputs, origin=(0, 0, 0))
    want = halo.reference(s9, (4, 2, 9), inputs=inputs, origin=(0, 0, 0))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0.091158625)


def test_round_up_producer_in_a_guarded_tail_stays_inside_its_allocation():
    _run()  # matches the reference
    assert_survives_in_a_child("test_round_up_in_guarded_tail", repeats=6)
