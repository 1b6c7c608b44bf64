"""Found by `python -m halo.fuzz --target cuda --seed 1` (program 1000073, schedule
1000220): an rfactor'ed update with a vthread, its intermediate computed in the merge's
threads, and an atomic update of a Func stored in "local" memory inside that: the atomic
was a CUDA atomic on local memory, and the launch failed ("unspecified launch failure").
A thread's own array is now updated without atomics."""
import numpy as np

import halo


def test_rfactor_vthread_and_a_local_atomic_update():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.uint8, 2, "in0")
    w1 = halo.ImageParam(halo.float32, 4, "w1")
    b1 = halo.Func("b1")
    b1[y, x] = halo.boundary.mirror_interior(in0)[y, x]
    s2 = halo.Func("s2")
    s2[y, x] = ((halo.max(halo.cast(halo.int32, b1[y, x]), y) ^ 1) & 2)
    b3 = halo.Func("b3")
    b3[y, x] = halo.boundary.mirror_image(in0)[y, x]
    s4 = halo.Func("s4")
    s4[y, x] = (((((halo.cast(halo.int32, b3[y, x - 1]) * -2) + (halo.cast(halo.int32, b3[y + 1, x]) * 9)) + (halo.cast(halo.int32, b3[y, x + 1]) * 6)) + (halo.cast(halo.int32, b3[y - 1, x - 1]) * 5)) + (halo.cast(halo.int32, b3[y - 1, x + 1]) * 5))
    s6 = halo.Func("s6")
    r5 = halo.RDom((0, 11), name="r5")
    s6[y, x] = 0
    s6[y, x] += halo.clamp(halo.clamp((s2[y, r5.x] * s4[r5.x, x]), -16777216, 16777216), -1525201, 1525201)
    s8 = halo.Func("s8")
    r7 = halo.RDom((0, 1), (-1, 2), (-1, 2), name="r7")
    s8[c, y, x] = 0.5
    s8[c, y, x] += (halo.clamp(halo.clamp(halo.cast(halo.float32, s6[y + r7.y, x + r7.z]), -1000000.0, 1000000.0), -1000.0, 1000.0) * w1[halo.clamp(c, 0, 1), r7.x, r7.y + 1, r7.z + 1])

    y, x, yo1, xo2, yi3, xi4, u1, xi3, xv4, xt5, r7xo1, r7xi2, yi2, r5xo1, r5xi2, xo1, xi2, w1_global_d3, w1_global_d3o1, w1_global_d3i2, w1_global_d3v3, w1_global_d3t4 = halo.vars("y x yo1 xo2 yi3 xi4 u1 xi3 xv4 xt5 r7xo1 r7xi2 yi2 r5xo1 r5xi2 xo1 xi2 w1_global_d3 w1_global_d3o1 w1_global_d3i2 w1_global_d3v3 w1_global_d3t4")
    s8.gpu_tile(y, x, yo1, xo2, yi3, xi4, 7, 2)
    s8_rf = s8.update(0).rfactor(r7.y, u1, name='s8_rf')
    s8.update(0).split(x, xo2, xi3, 8, tail='guard')
    s8.update(0).split(xi3, xv4, xt5, 2)
    s8.update(0).gpu_blocks(xo2)
    s8.update(0).vthread(xv4)
    s8.update(0).gpu_threads(xt5)
    s8.update(0).gpu_blocks(y)
    s8_rf.compute_at(s8.update(0), xt5)
    s8_rf.vectorize(u1, 2)
    s8_rf.vectorize(x, 4)
    s8_rf.update(0).split(r7.x, r7xo1, r7xi2, 3)
    s6.compute_at(s8_rf.update(0), r7xi2)
    s6.store_in('local')
    s6.split(y, yo1, yi2, 8, tail='shift_inwards')
    s6.update(0).atomic()
    s6.update(0).split(r5.x, r5xo1, r5xi2, 8, tail='guard')
    s4.compute_at(s8_rf.update(0), u1)
    b1.compute_root()
    b1.gpu_tile(x, xo1, xi2, 3, tail='shift_inwards')
    w1_global = w1.cache_read('global')
    w1_global.compute_root()
    w1_global.split(w1_global_d3, w1_global_d3o1, w1_global_d3i2, 10, tail='shift_inwards')
    w1_global.split(w1_global_d3i2, w1_global_d3v3, w1_global_d3t4, 5)
    w1_global.gpu_blocks(w1_global_d3o1)
    w1_global.vthread(w1_global_d3v3)
    w1_global.gpu_threads(w1_global_d3t4)

    rng = np.random.default_rng(1000073)
    inputs = {
        in0: rng.integers(0, 256, (2, 16)).astype("uint8"),
        w1: (rng.integers(-16, 17, (2, 1, 2, 2)) / 8).astype("float32"),
    }
    got = s8.realize((2, 6, 9), inputs=inputs, origin=(0, 0, 0), target='cuda')
    want = halo.reference(s8, (2, 6, 9), inputs=inputs, origin=(0, 0, 0))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=335.664221)


if __name__ == "__main__":
    test_rfactor_vthread_and_a_local_atomic_update()
