"""Unsharp masking, as in Halide's apps/unsharp: sharpen an RGB image through its luma.

    gray    = 0.299 R + 0.587 G + 0.114 B
    blur    = gray convolved with a normalized 7-tap Gaussian (sigma 1.5), in y then in x
    ratio   = (2 gray - blur) / gray   i.e. (gray + amount * (gray - blur)) / gray, amount 1
    out[c]  = ratio * image[c]

Sharpening the luma and scaling every channel by the same ratio keeps the colors' hue
(the variant of Halide's app; the per-channel `img + amount * (img - blur)` would blur
three channels instead of one). The image is [c, y, x], 3 x 1536 x 2560, with its edges
repeated. Run `python -m apps.unsharp`.

The schedule is Halide's CPU schedule without its sliding window, which halo does not
implement yet (a Func stored per strip and computed per row would be recomputed in full
for every row): the output is cut into tiles of 32 rows x 256 columns, one thread per
strip of tiles, and per tile the luma (38 x 262 with the blur's margins), the vertical
blur (32 x 262) and the ratio (32 x 256) are computed into buffers that stay in the L2
cache, each vectorized across x. The ratio is computed once per pixel and reused for
the three channels; the horizontal blur and the sharpened luma are inlined into it.
"""
from __future__ import annotations

import numpy as np

import halo
from apps.gpu_rows import rows_of_threads, tiles_by_rows_of_threads
from apps.numpy_check import check_and_time

TILE_ROWS, TILE_COLUMNS, VECTOR = 32, 256, 8
SIGMA = 1.5
LUMA = (0.299, 0.587, 0.114)


def gaussian_taps(sigma: float = SIGMA, radius: int = 3) -> list[float]:
    """The taps w[0..radius] of a normalized Gaussian (w[k] weighs offsets +k and -k),
    as float32 values so that every implementation multiplies by the same numbers."""
    k = np.arange(-radius, radius + 1, dtype=np.float64)
    weights = np.exp(-k * k / (2 * sigma * sigma))
    weights /= weights.sum()
    return [float(np.float32(w)) for w in weights[radius:]]


def gaussian(at):
    """The 7-tap blur of `at(offset)` (a halo Expr, Halide Expr or NumPy array alike)."""
    w = gaussian_taps()
    return (w[0] * at(0) + w[1] * (at(-1) + at(1)) + w[2] * (at(-2) + at(2)) +
            w[3] * (at(-3) + at(3)))


def luma(channel):
    """0.299 R + 0.587 G + 0.114 B of `channel(i)`."""
    return LUMA[0] * channel(0) + LUMA[1] * channel(1) + LUMA[2] * channel(2)


def algorithm():
    """Returns (image, output, {name: Func})."""
    c, y, x = halo.vars("c y x")
    image = halo.ImageParam(halo.float32, 3, "image")  # [c, y, x]
    clamped = halo.boundary.repeat_edge(image)
    gray = halo.Func("gray")
    gray[y, x] = luma(lambda i: clamped[i, y, x])
    blur_y = halo.Func("blur_y")
    blur_y[y, x] = gaussian(lambda k: gray[y + k, x])
    blur_x = halo.Func("blur_x")
    blur_x[y, x] = gaussian(lambda k: blur_y[y, x + k])
    sharpen = halo.Func("sharpen")
    sharpen[y, x] = 2 * gray[y, x] - blur_x[y, x]
    ratio = halo.Func("ratio")
    ratio[y, x] = sharpen[y, x] / gray[y, x]
    output = halo.Func("output")
    output[c, y, x] = ratio[y, x] * image[c, y, x]
    return image, output, {"output": output, "ratio": ratio, "sharpen": sharpen,
                           "blur_x": blur_x, "blur_y": blur_y, "gray": gray}


def schedule(funcs) -> None:
    """Tiles of 32 x 256 pixels, a strip of tiles per task, stages computed per tile."""
    c, y, x, yo, xo, yi, xi = halo.vars("c y x yo xo yi xi")
    output = funcs["output"]
    output.split(y, yo, yi, TILE_ROWS).split(x, xo, xi, TILE_COLUMNS) \
        .reorder(yo, xo, yi, c, xi).parallel(yo).vectorize(xi, VECTOR)
    for name in ("gray", "blur_y", "ratio"):
        funcs[name].compute_at(output, xo).vectorize(funcs[name].args[-1], VECTOR)


def gpu_schedule(funcs, rows: int = 32, columns: int = 64, thread_rows: int = 8) -> None:
    """For target 'cuda': tiles of `rows` x `columns` pixels a block, `thread_rows` rows
    of threads a block, each thread computing every `thread_rows`-th row of its column
    (the three channels of a pixel in one thread). gray and blur_y per block in shared
    memory, filled the same way: the block's threads span the blur's margins across x
    (`columns` + 6), and walk down their regions `thread_rows` rows at a time, so the
    margins in y cost 6 / `rows` of gray's work, not one thread each. ratio per pixel in
    registers, the rest inline."""
    output = funcs["output"]
    c = output.args[0]
    xo, xi = tiles_by_rows_of_threads(output.bound(c, 0, 3), rows, columns, thread_rows,
                                      (c,))
    output.unroll(c)
    for name in ("gray", "blur_y"):
        rows_of_threads(funcs[name].compute_at(output, xo).store_in("shared"), thread_rows)
    funcs["ratio"].compute_at(output, xi)


def numpy_unsharp(image: np.ndarray) -> np.ndarray:
    height, width = image.shape[1:]
    gray = luma(lambda i: image[i])
    padded = np.pad(gray, 3, mode="edge")
    blur_y = gaussian(lambda k: padded[3 + k:3 + k + height])
    blur = gaussian(lambda k: blur_y[:, 3 + k:3 + k + width])
    ratio = (2 * gray - blur) / gray
    return ratio * image


def make_inputs(shape=(3, 1536, 2560), seed: int = 0) -> dict[str, np.ndarray]:
    """A random image in [0.25, 1): the ratio divides by the luma, so keep it away from 0."""
    rng = np.random.default_rng(seed)
    return {"image": rng.uniform(0.25, 1.0, shape).astype(np.float32)}


def main(shape=(3, 1536, 2560), repeats: int = 5) -> dict:
    _, out, funcs = algorithm()
    schedule(funcs)
    return check_and_time("unsharp", "x".join(map(str, shape)), out.compile(), shape,
                          make_inputs(shape), numpy_unsharp, repeats, rtol=1e-4, atol=1e-5)

if __name__ == "__main__":
    print(main())
