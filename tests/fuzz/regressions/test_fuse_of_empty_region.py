"""A fused loop over an empty region ran when both of its dimensions' extents were
negative: the fused extent is their product, which came out positive. Here a sliding
window leaves `b2` an empty region on a guarded tile tail (y extent -1, x extent -1 once
the window has passed the end), and the fused, parallel loop wrote one row past `b2`'s
stack allocation (found by `python -m halo.fuzz --pairs 10000 --seed 1 --jobs 16`,
program 1003091 schedule 1009275, as a segfault with 16 threads). The script runs in a
child process with 16 threads, where the overrun crashed it every time."""

import numpy as np

import halo
from tests.fuzz.regressions.child_process import assert_survives_in_a_child


def _run():
    y, x = halo.vars("y x")
    in0 = halo.ImageParam(halo.float32, 2, "in0")
    b2 = halo.Func("b2")
    b2[y, x] = halo.boundary.repeat_image(in0)[y, x]
    s3 = halo.Func("s3")
    s3[y, x] = ((halo.cast(halo.uint8, halo.clamp(b2[y, x], 0.0, 255.0)) ^ halo.cast(halo.uint8, halo.clamp(b2[y, x], 0.0, 255.0))) % halo.cast(halo.uint8, halo.clamp(b2[y, x], 0.0, 255.0)))
    s7 = halo.Func("s7")
    r6 = halo.RDom((1, 9), name="r6")
    s7[y, x] = s3[y, x]
    s7[y, r6.x] = s7[y, r6.x] + s7[y, r6.x - 1]

    s7_global = s7.cache_write('global')
    s7_global.compute_at(s7, 'x')
    s3.compute_at(s7, 'x')
    s3.tile('y', 'x', 'yo1', 'xo2', 'yi3', 'xi4', 8, 8, tail='guard')
    b2.compute_at(s3, 'xi4')
    b2.store_at(s3, 'xo2')
    b2.fuse('y', 'x', 'yxf1')
    b2.parallel('yxf1', 2)

    rng = np.random.default_rng(1003091)
    inputs = {
        in0: (rng.integers(-32, 33, (19, 3)) / 4).astype("float32"),
    }
    got = s7.realize((19, 9), inputs=inputs, origin=(0, 0))
    want = halo.reference(s7, (19, 9), inputs=inputs, origin=(0, 0))
    np.testing.assert_array_equal(got, want)


def test_fused_loop_over_an_empty_region_runs_no_iterations():
    _run()  # matches the reference
    assert_survives_in_a_child("test_fuse_of_empty_region", repeats=4,
                               HALO_NUM_THREADS="16")
