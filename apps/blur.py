"""3x3 separable box blur: the canonical Halide example.

Algorithm, an expert hand schedule, and a NumPy reference. Run `python -m apps.blur`.
"""
from __future__ import annotations

import numpy as np

import halo
from apps.numpy_check import check_and_time

# The average multiplies by the float32 nearest 1/3 rather than dividing by 3: Halide
# compiles `e / 3.0f` into that multiplication, halo keeps IEEE division (exact as NumPy),
# so the algorithm says which one it means, and both twins compute the same thing.
ONE_THIRD = np.float32(1 / 3)


def algorithm():
    """Returns (input, output, {name: Func}) for a 3x3 blur with edges repeated."""
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    clamped = halo.boundary.repeat_edge(inp)
    blur_x, blur_y = halo.Func("blur_x"), halo.Func("blur_y")
    blur_x[y, x] = (clamped[y, x - 1] + clamped[y, x] + clamped[y, x + 1]) * ONE_THIRD
    blur_y[y, x] = (blur_x[y - 1, x] + blur_x[y, x] + blur_x[y + 1, x]) * ONE_THIRD
    return inp, blur_y, {"blur_x": blur_x, "blur_y": blur_y, "clamped": clamped}


def schedule(funcs) -> None:
    """Tiles of 32 rows x 256 columns; blur_x computed per tile (the API.md schedule)."""
    y, x, yo, xo, yi, xi = halo.vars("y x yo xo yi xi")
    blur_y, blur_x = funcs["blur_y"], funcs["blur_x"]
    blur_y.tile(y, x, yo, xo, yi, xi, 32, 256).parallel(yo).vectorize(xi, 8)
    blur_x.compute_at(blur_y, xo).vectorize(x, 8)


def gpu_schedule(funcs) -> None:
    """For target 'cuda': blocks of 32 rows x 64 columns, each thread 4 rows of one
    column (8 x 64 threads); blur_x per block in shared memory, filled by the same
    threads."""
    y, x, yo, xo, yi, xi, yii = halo.vars("y x yo xo yi xi yii")
    blur_y, blur_x = funcs["blur_y"], funcs["blur_x"]
    blur_y.tile(y, x, yo, xo, yi, xi, 32, 64).split(yi, yi, yii, 4)
    blur_y.reorder(yo, xo, yi, xi, yii).gpu_blocks(yo, xo).gpu_threads(yi, xi).unroll(yii)
    blur_x.compute_at(blur_y, xo).store_in("shared").split(y, y, yii, 5)
    blur_x.reorder(y, x, yii).gpu_threads(y, x).unroll(yii)


def numpy_blur(image: np.ndarray) -> np.ndarray:
    p = np.pad(image, 1, mode="edge")
    bx = (p[:, :-2] + p[:, 1:-1] + p[:, 2:]) * ONE_THIRD
    return (bx[:-2] + bx[1:-1] + bx[2:]) * ONE_THIRD


def main(shape=(4800, 6400), repeats: int = 5) -> dict:
    image = np.random.default_rng(0).random(shape, dtype=np.float32)
    _, out, funcs = algorithm()
    schedule(funcs)
    return check_and_time("blur", "x".join(map(str, shape)), out.compile(), shape,
                          {"inp": image}, lambda inp: numpy_blur(inp), repeats,
                          rtol=1e-5, atol=1e-6)

if __name__ == "__main__":
    print(main())
