"""A round_up split in a producer computed inside a whole tile wrote past another
producer's storage. s12's fused, unrolled loop gets a whole-tile nest; s5, computed per
unrolled iteration, splits c by 8 with round_up under a specialization, so in the whole
nest it computes 8 channels from each channel it needs and reads s4 up to c.max + 7, while
in the clamped nest it computes the whole channel range at once and reads s4 only up to
c.min + (c.max - c.min) // 8 * 8 + 7. s4 is stored at the root, sized from the clamped
nest alone (region analysis reads only that one), so the whole nest overran it ("double
free or corruption"). A stage with a round_up split in it, or in a Func computed inside it,
now has no whole-tile nest. Found by `python -m halo.fuzz --pairs 10000 --seed 5 --jobs
16` (program 5000391 schedule 5001175). Run in a child process: the overrun corrupts the
heap."""

import numpy as np

import halo
from tests.fuzz.regressions.child_process import assert_survives_in_a_child


def _run():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.float32, 3, "in0")
    w1 = halo.ImageParam(halo.int16, 4, "w1")
    b1 = halo.Func("b1")
    b1[c, y, x] = halo.boundary.constant_exterior(in0, -0.25)[c, y, x]
    s3 = halo.Func("s3")
    r2 = halo.RDom((0, 4), (-1, 3), (-1, 3), name="r2")
    s3[c, y, x] = 0.5
    s3[c, y, x] += (b1[r2.x, y + r2.y, x + r2.z] * halo.cast(halo.float32, w1[halo.clamp(c, 0, 3), r2.x, r2.y + 1, r2.z + 1]))
    s4 = halo.Func("s4")
    s4[c, y, x] = (((((((((s3[c, y, x] * -0.25) + (s3[c, y - 1, x - 1] * 2.0)) + (s3[c, y + 1, x - 1] * 2.0)) + (s3[c, y + 1, x] * -0.25)) + (s3[c, y - 1, x] * 2.0)) + (s3[c, y, x - 1] * 0.5)) + (s3[c, y - 1, x + 1] * 0.5)) + (s3[c, y, x + 1] * 0.5)) + (s3[c, y + 1, x + 1] * 3.75))
    s5 = halo.Func("s5")
    s5[c, y, x] = halo.cast(halo.int16, halo.clamp(s4[c, y, x], -32768.0, 32767.0))
    s12 = halo.Func("s12")
    s12[c, y, x] = s5[c, y // 2, x]

    s12.fuse('c', 'y', 'cyf1')
    s12.unroll('cyf1', 4)
    s5.compute_at(s12, 'cyf1_unroll')
    s5.specialize(in0.shape[2] == 1).split('c', 'co2', 'ci3', 8, tail='round_up')
    s4.compute_at(s12, 'cyf1')
    s4.store_root()

    rng = np.random.default_rng(5000391)
    inputs = {
        in0: (rng.integers(-32, 33, (4, 19, 1)) / 4).astype("float32"),
        w1: rng.integers(-4, 5, (4, 4, 3, 3)).astype("int16"),
    }
    got = s12.realize((4, 6, 17), inputs=inputs, origin=(0, -5, -2))
    want = halo.reference(s12, (4, 6, 17), inputs=inputs, origin=(0, -5, -2))
    np.testing.assert_array_equal(got, want)


def test_round_up_in_a_producer_inside_a_whole_tile_stays_in_storage():
    assert_survives_in_a_child("test_round_up_in_a_producer_inside_a_whole_tile")
