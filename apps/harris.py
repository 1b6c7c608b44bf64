"""Harris corner response, as in Halide's apps/harris.

    gray        = 0.299 R + 0.587 G + 0.114 B
    Ix, Iy      = Sobel gradients of gray (scaled by 1/12)
    Sxx, Syy, Sxy = 3x3 box sums of Ix*Ix, Iy*Iy, Ix*Iy
    response    = det - 0.04 trace^2,  det = Sxx Syy - Sxy^2,  trace = Sxx + Syy

The input is [c, y, x], 3 x 1536 x 2560. Like Halide's app there is no boundary
condition: the response is computed where its 5x5 window lies inside the image, so the
output is (H - 4) x (W - 4), and output[y, x] is the response centered at (y + 2, x + 2).
Run `python -m apps.harris`.

The schedule is Halide's CPU schedule for its app: strips of 32 output rows run in
parallel, and in each strip gray, Ix and Iy keep their rows (`store_at` the strip) and
compute one new row per output row (`compute_at` the row: a sliding window), so each is
computed once, plus a two-row apron per strip. The products and the box sums are
inlined into the output, all of it vectorized.
"""
from __future__ import annotations

import numpy as np

import halo
from apps.gpu_rows import rows_of_threads, tiles_by_rows_of_threads
from apps.numpy_check import check_and_time

STRIP_ROWS = 32
LUMA = (0.299, 0.587, 0.114)
K = 0.04


def luma(channel):
    """0.299 R + 0.587 G + 0.114 B of `channel(i)`."""
    return LUMA[0] * channel(0) + LUMA[1] * channel(1) + LUMA[2] * channel(2)


def sobel_x(at):
    """d/dx of `at(dy, dx)` (halo Expr, Halide Expr or NumPy array alike), scaled by 1/12."""
    return ((at(-1, 1) - at(-1, -1)) + 2 * (at(0, 1) - at(0, -1)) +
            (at(1, 1) - at(1, -1))) * (1 / 12)


def sobel_y(at):
    """d/dy of `at(dy, dx)`, scaled by 1/12."""
    return ((at(1, -1) - at(-1, -1)) + 2 * (at(1, 0) - at(-1, 0)) +
            (at(1, 1) - at(-1, 1))) * (1 / 12)


def box3x3(at):
    """The sum of `at(dy, dx)` over the 3x3 window."""
    return (at(-1, -1) + at(-1, 0) + at(-1, 1) + at(0, -1) + at(0, 0) + at(0, 1) +
            at(1, -1) + at(1, 0) + at(1, 1))


def response(sxx, syy, sxy):
    """det - k trace^2 of the structure tensor."""
    trace = sxx + syy
    return sxx * syy - sxy * sxy - K * trace * trace


def algorithm():
    """Returns (image, output, {name: Func})."""
    y, x = halo.vars("y x")
    image = halo.ImageParam(halo.float32, 3, "image")  # [c, y, x]
    clamped = halo.boundary.repeat_edge(image)  # see the module's docstring
    gray, ix, iy = halo.Func("gray"), halo.Func("Ix"), halo.Func("Iy")
    gray[y, x] = luma(lambda c: clamped[c, y, x])
    ix[y, x] = sobel_x(lambda dy, dx: gray[y + dy, x + dx])
    iy[y, x] = sobel_y(lambda dy, dx: gray[y + dy, x + dx])
    sxx, syy, sxy = halo.Func("Sxx"), halo.Func("Syy"), halo.Func("Sxy")
    sxx[y, x] = box3x3(lambda dy, dx: ix[y + dy, x + dx] * ix[y + dy, x + dx])
    syy[y, x] = box3x3(lambda dy, dx: iy[y + dy, x + dx] * iy[y + dy, x + dx])
    sxy[y, x] = box3x3(lambda dy, dx: ix[y + dy, x + dx] * iy[y + dy, x + dx])
    harris = halo.Func("harris")
    harris[y, x] = response(sxx[y, x], syy[y, x], sxy[y, x])
    output = halo.Func("output")
    output[y, x] = harris[y + 2, x + 2]
    return image, output, {"output": output, "harris": harris, "Sxx": sxx, "Syy": syy,
                           "Sxy": sxy, "Ix": ix, "Iy": iy, "gray": gray}


def vector() -> int:
    """One vector of float32 on this CPU."""
    return halo.Target("host").natural_vector_size(halo.float32)


def schedule(funcs) -> None:
    """Strips of rows in parallel; gray, Ix and Iy slide down each strip a row at a time."""
    y, x, yo, yi = halo.vars("y x yo yi")
    output = funcs["output"]
    output.split(y, yo, yi, STRIP_ROWS).parallel(yo).vectorize(x, vector())
    for name in ("gray", "Iy", "Ix"):
        funcs[name].store_at(output, yo).compute_at(output, yi).vectorize(x, vector())


def gpu_schedule(funcs, rows: int = 32, columns: int = 64, thread_rows: int = 8) -> None:
    """For target 'cuda': tiles of `rows` x `columns` pixels a block, `thread_rows` rows
    of threads a block, each thread computing every `thread_rows`-th row of its column.
    gray, Ix and Iy per block in shared memory, filled the same way (the block's threads
    span their margins across x, and walk down their regions); the structure tensor and
    the response inline."""
    output = funcs["output"]
    xo, _ = tiles_by_rows_of_threads(output, rows, columns, thread_rows)
    for name in ("gray", "Ix", "Iy"):
        rows_of_threads(funcs[name].compute_at(output, xo).store_in("shared"), thread_rows)


def numpy_harris(image: np.ndarray) -> np.ndarray:
    gray = luma(lambda c: image[c])

    def shifted(a: np.ndarray, margin: int):
        """at(dy, dx) -> a[margin + dy + y, margin + dx + x] over the interior."""
        h, w = a.shape[0] - 2 * margin, a.shape[1] - 2 * margin
        return lambda dy, dx: a[margin + dy:margin + dy + h, margin + dx:margin + dx + w]

    ix = sobel_x(shifted(gray, 1))
    iy = sobel_y(shifted(gray, 1))
    sxx = box3x3(shifted(ix * ix, 1))
    syy = box3x3(shifted(iy * iy, 1))
    sxy = box3x3(shifted(ix * iy, 1))
    return response(sxx, syy, sxy)


def make_inputs(shape=(3, 1536, 2560), seed: int = 0) -> dict[str, np.ndarray]:
    return {"image": np.random.default_rng(seed).random(shape, dtype=np.float32)}


def output_shape(image_shape) -> tuple[int, int]:
    return image_shape[1] - 4, image_shape[2] - 4


def main(shape=(3, 1536, 2560), repeats: int = 5) -> dict:
    _, out, funcs = algorithm()
    schedule(funcs)
    return check_and_time("harris", "x".join(map(str, shape)), out.compile(),
                          output_shape(shape), make_inputs(shape), numpy_harris, repeats,
                          rtol=1e-4, atol=1e-6)

if __name__ == "__main__":
    print(main())
