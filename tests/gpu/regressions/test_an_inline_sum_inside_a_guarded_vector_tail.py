"""Found by `python -m halo.fuzz --target cuda --seed 20261128` (program 20261128000422,
schedule 20261128001266): s5's rows, vectorized by 3 over 2 rows, run 3 times with the
last guarded, and the inline sum computed inside them was computed for the guarded row
too, reading row 26 of a 26-row shared array (compute-sanitizer: an invalid __shared__
read). As in test_a_producer_inside_a_guarded_tail_through_a_mirror.py: the guarded
promise in the sum's region is now a clamp. Needs a GPU."""
import numpy as np

import halo


def test_an_inline_sum_inside_a_guarded_vector_tail():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.float32, 2, "in0")
    b2 = halo.Func("b2")
    b2[y, x] = halo.boundary.constant_exterior(in0, -1.5)[y, x]
    b3 = halo.Func("b3")
    b3[y, x] = halo.boundary.repeat_edge(in0)[y, x]
    s1 = halo.Func("s1")
    s1[y, x] = b2[halo.clamp(halo.cast(halo.int32, halo.clamp(b3[y, x], -8.0, 8.0)), 0, 13), x]
    s5 = halo.Func("s5")
    r4 = halo.RDom((0, 1), (-2, 5), name="r4")
    s5[y, x] = halo.sum((s1[y + r4.x, x + r4.y] * halo.cast(halo.float32, (r4.x - r4.y + 2))))
    s8 = halo.Func("s8")
    r6 = halo.RDom((0, 2), (0, 2), name="r6")
    red7_call = halo.maximum(s5[y * 2 + r6.x, x * 2 + r6.y], name="red7")
    s8[y, x] = red7_call
    s16 = halo.Func("s16")
    r15 = halo.RDom((1, 12), name="r15")
    s16[y, x] = s8[y, x]
    s16[r15.x, x] = s16[r15.x, x] + s16[r15.x - 1, x]
    s17 = halo.Func("s17")
    s17[y, x] = s16[x, y]
    s19 = halo.Func("s19")
    r18 = halo.RDom((0, 5), (0, 2), name="r18")
    r18.where(r18.y < r18.x)
    s19[y, x] = 0.0
    s19[r18.y, r18.x] += s17[r18.x, r18.y]

    x, xo1, xi2, u1, y, yo1, yi2, u1o1, u1i2 = halo.vars("x xo1 xi2 u1 y yo1 yi2 u1o1 u1i2")
    s19.gpu_tile(x, xo1, xi2, 16, tail='guard')
    s19_rf = s19.update(0).rfactor(r18.y, u1, name='s19_rf')
    s19.update(0).gpu_blocks(x)
    s19_rf.gpu_tile(y, yo1, yi2, 7)
    s19_rf.update(0).gpu_tile(u1, u1o1, u1i2, 4, tail='guard')
    s16.compute_at(s19_rf.update(0), u1i2)
    s5.compute_at(s16, y)
    s5.vectorize(y, 3)
    s5.split(x, xo1, xi2, 3, tail='guard')
    b3.compute_at(s19_rf.update(0), u1o1)

    rng = np.random.default_rng(20261128000422)
    inputs = {
        in0: (rng.integers(-32, 33, (13, 13)) / 4).astype("float32"),
    }
    got = s19.realize((16, 1), inputs=inputs, origin=(2, 2), target="cuda")
    want = halo.reference(s19, (16, 1), inputs=inputs, origin=(2, 2))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-06)

