"""crash: program 1002695 schedule 1008085 (legal), found by `python -m halo.fuzz`.

    the worker died (exit code -6)

LLVM's SLP vectorizer failed an internal assertion ("must be scheduled at this point")
on this pipeline's code and aborted the process; halo now leaves SLP vectorization off
(it writes its own vector code).
"""
import numpy as np

import halo


def test_crash_1002695_1008085():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.float32, 3, "in0")
    in1 = halo.ImageParam(halo.int32, 2, "in1")
    b1 = halo.Func("b1")
    b1[c, y, x] = halo.boundary.repeat_edge(in0)[c, y, x]
    s2 = halo.Func("s2")
    s2[c, y, x] = (halo.floor(b1[c, y, x]) * 2.0)
    s6 = halo.Func("s6")
    r5 = halo.RDom((0, 1), (-2, 5), name="r5")
    s6[c, y, x] = halo.maximum(s2[c, y + r5.x, x + r5.y] * halo.cast(halo.float32, (r5.x - r5.y + 2)))
    s7 = halo.Func("s7")
    s7[c, y, x] = s6[c, y * 2 + 1, x]
    s10 = halo.Func("s10")
    s10[y, x] = in1[halo.clamp(halo.cast(halo.int32, halo.clamp(s7[1, y, x], -16777216.0, 16777216.0)), 0, in1.shape[0] - 1), halo.clamp(x, 0, in1.shape[1] - 1)]
    s14 = halo.Func("s14")
    r13 = halo.RDom((0, 2), (0, 2), name="r13")
    s14[y, x] = halo.maximum(s10[y * 2 + r13.x, x * 2 + r13.y])
    s17 = halo.Func("s17")
    r16 = halo.RDom((0, 1), name="r16")
    s17[y, x] = halo.sum(s14[y, r16.x] * s14[r16.x, x])


    rng = np.random.default_rng(1002695)
    inputs = {
        in0: (rng.integers(-32, 33, (2, 11, 5)) / 4).astype("float32"),
        in1: rng.integers(-1000, 1001, (16, 5)).astype("int32"),
    }
    got = s17.realize((13, 6), inputs=inputs, origin=(5, 5))
    want = halo.reference(s17, (13, 6), inputs=inputs, origin=(5, 5))
    np.testing.assert_array_equal(got, want)


