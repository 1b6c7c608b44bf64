"""A guard hoisted by partition_loops out of an unrolled loop nested in a vectorized one
became an if/else inside vector code, which was predicated lane by lane and wrote wrong
values (found by `python -m halo.fuzz`, program 1000043 schedule 1000131, shrunk: got
uint8 255 where the reference gives 60). Guards inside vector code stay where they are."""
import numpy as np

import halo


def test_guard_of_an_unrolled_loop_inside_a_vectorized_loop():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.int16, 2, "in0")
    b1 = halo.Func("b1")
    b1[y, x] = halo.boundary.constant_exterior(in0, 2)[y, x]
    b2 = halo.Func("b2")
    b2[y, x] = halo.boundary.mirror_image(in0)[y, x]
    s3 = halo.Func("s3")
    s3[y, x] = halo.select(b1[y, x] < b2[y, x], b1[y, x], b2[y, x])
    s5 = halo.Func("s5")
    r4 = halo.RDom((-1, 2), (0, 1), name="r4")
    s5[y, x] = 9
    s5[y, x] += (halo.cast(halo.int32, s3[y + r4.x, x + r4.y]) * (r4.x - r4.y + 2))
    s6 = halo.Func("s6")
    s6[y, x] = s5[x, y]
    s7 = halo.Func("s7")
    s7[c, y, x] = halo.min(halo.cast(halo.uint8, halo.clamp(s6[y, x], 0, 255)), halo.cast(halo.uint8, halo.clamp(s6[y, x], 0, 255)))
    s8 = halo.Func("s8")
    s8[c, y, x] = (halo.max((s7[c, y, x] // halo.cast(halo.uint8, halo.clamp(y, 0, 255))), halo.cast(halo.uint8, halo.clamp(c, 0, 255))) // halo.cast(halo.uint8, halo.clamp(x, 0, 255)))
    s15 = halo.Func("s15")
    s15[c, y, x] = halo.boundary.mirror_interior(s8, bounds=[(0, 3), (0, 6), (0, 23)])[c, y, x]

    s8.compute_at(s15, 'y')
    s7.compute_at(s8, 'x')
    s7.unroll('x', 4)
    s7.vectorize('y', 4)
    s5.compute_at(s8, 'y')

    rng = np.random.default_rng(1000043)
    inputs = {
        in0: rng.integers(-300, 301, (7, 7)).astype("int16"),
    }
    got = s15.realize((3, 3, 16), inputs=inputs, origin=(0, 0, 0))
    want = halo.reference(s15, (3, 3, 16), inputs=inputs, origin=(0, 0, 0))
    np.testing.assert_array_equal(got, want)
