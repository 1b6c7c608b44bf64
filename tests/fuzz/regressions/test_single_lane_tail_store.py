"""LLVM's loop vectorizer predicated `s16`'s 9-column loop with 8-lane vectors and, after
unrolling, its last vector became a masked store of one constant lane; on AVX-512 hosts
LLVM 22 stores such a lane of a truncated vector at the untruncated width (llvm/
llvm-project#179489), so the uint8 store wrote four bytes and clobbered three columns of
the next row. Found by `python -m halo.fuzz --pairs 10000 --seed 1 --jobs 16` (program
1003089 schedule 1009268) on an Emerald Rapids host; halo now makes single-lane masked
stores scalar (halo/backends/llvm/single_lane_stores.py)."""
import numpy as np

import halo


def test_single_lane_tail_of_a_vectorized_uint8_loop():
    c, y, x = halo.vars("c y x")
    in0 = halo.ImageParam(halo.int16, 2, "in0")
    b1 = halo.Func("b1")
    b1[y, x] = halo.boundary.repeat_image(in0)[y, x]
    s2 = halo.Func("s2")
    s2[y, x] = (halo.min(b1[y, x], b1[y, x]) - 6)
    s3 = halo.Func("s3")
    s3[y, x] = halo.boundary.mirror_image(s2, bounds=[(0, 6), (0, 23)])[y, x]
    s5 = halo.Func("s5")
    r4 = halo.RDom((0, 1), (-1, 3), name="r4")
    r4.where((r4.x + r4.y) % 2 == 0)
    s5[y, x] = halo.cast(halo.uint8, 7)
    s5[y, x] += (halo.cast(halo.uint8, halo.clamp(s3[y + r4.x, x + r4.y], 0, 255)) * halo.cast(halo.uint8, halo.clamp((r4.x - r4.y + 2), 0, 255)))
    s13 = halo.Func("s13")
    r12 = halo.RDom((0, 7), name="r12")
    s13[y, x] = halo.sum((halo.cast(halo.int32, s5[y, r12.x]) * halo.cast(halo.int32, s5[r12.x, x])))
    s14 = halo.Func("s14")
    s14[y, x] = (((s13[y, x - 1] * 3) + (s13[y, x] * 1)) + (s13[y, x + 1] * -2))
    s16 = halo.Func("s16")
    s16[c, y, x] = halo.min(halo.cast(halo.uint8, halo.clamp(s14[y, x], 0, 255)), halo.cast(halo.uint8, halo.clamp(s14[y, x], 0, 255)))
    s19 = halo.Func("s19")
    s19[c, y, x] = (((((halo.cast(halo.int32, s16[c, y - 2, x]) * -3) + (halo.cast(halo.int32, s16[c, y - 1, x]) * 8)) + (halo.cast(halo.int32, s16[c, y, x]) * -3)) + (halo.cast(halo.int32, s16[c, y + 1, x]) * 5)) + (halo.cast(halo.int32, s16[c, y + 2, x]) * -5))

    s19.bound('y', 0, 9)
    s19.bound('x', 0, 9)
    s16.compute_at(s19, 'y')
    s16.reorder('c', 'x', 'y')

    rng = np.random.default_rng(1003089)
    inputs = {
        in0: rng.integers(-300, 301, (5, 16)).astype("int16"),
    }
    got = s19.realize((4, 9, 9), inputs=inputs, origin=(0, 0, 0))
    want = halo.reference(s19, (4, 9, 9), inputs=inputs, origin=(0, 0, 0))
    np.testing.assert_array_equal(got, want)


if __name__ == "__main__":
    test_single_lane_tail_of_a_vectorized_uint8_loop()
