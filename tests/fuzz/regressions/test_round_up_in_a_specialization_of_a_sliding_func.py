"""A round_up split in a specialization of a Func stored outside the loop it is computed in
gave wrong values: the sliding window's refusal of round_up read only the stage's own
schedule, not its specializations', so `g` slid, storage folding kept the one point
each iteration requires, and the four points the round_up tile writes landed in that one
element. Every check of a stage's loops now reads `StageSchedule.variants()`. Found by
`python -m halo.fuzz --seed 1004`, shrunk by hand.
"""
import numpy as np

import halo


def test_round_up_in_a_specialization_of_a_sliding_func():
    x, xi = halo.vars("x xi")
    inp = halo.ImageParam(halo.float32, 1, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = inp[x]
    f[x] = g[x]
    g.compute_at(f, x).store_root()
    g.specialize(inp.shape[0] >= 4).split(x, x, xi, 4, tail="round_up")

    data = np.arange(17, dtype=np.float32)
    np.testing.assert_array_equal(f.realize((6,), inputs={inp: data}), data[:6])
    np.testing.assert_array_equal(f.realize((2,), inputs={inp: data[:3]}), data[:2])
