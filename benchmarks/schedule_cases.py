"""Schedules whose speed once depended on a lowering detail:
`python -m benchmarks.schedule_cases [--threads N] [--repeats R]`.

- ragged tiles: a 5x5 convolution update tiled 16x64 (vectorized, parallel over row
  tiles) at 1536x2560 and at 1535x2560; only the short tiles may pay for the tail, so
  both sizes should take about the same time (the ragged one took 6x longer when one
  short tile sent the whole stage down the guarded path).
- classic blur: Halide's `by.split(y, yo, yi, 32).parallel(yo).vectorize(x, 8)`,
  `bx.store_at(by, yo).compute_at(by, x).vectorize(x, 8)` at 1536x2560; blur_x slides
  down each strip, one new row per iteration (it was recomputed 3 rows at a time).

Each number is the median of `--repeats` calls after a warm-up (`halo.timing`), the
variants of a case interleaved round by round.
"""
from __future__ import annotations

import argparse

import numpy as np

import halo
from apps import blur
from halo.target import default_num_threads
from halo.timing import side_by_side


def ragged_convolution(rows: int, threads: int):
    y, x, yo, xo, yi, xi = halo.vars("y x yo xo yi xi")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    weights = halo.ImageParam(halo.float32, 2, "weights")
    clamped = halo.boundary.repeat_edge(inp)
    r = halo.RDom((0, 5), (0, 5), name="r")
    f = halo.Func("f")
    f[y, x] = 0.0
    f[y, x] += clamped[y + r.x - 2, x + r.y - 2] * weights[r.x, r.y]
    f.update(0).tile(y, x, yo, xo, yi, xi, 16, 64).vectorize(xi, 8).parallel(yo)
    kernel = f.compile(halo.Target("host", threads=threads))
    rng = np.random.default_rng(0)
    inputs = {"inp": rng.random((rows, 2560), dtype=np.float32),
              "weights": rng.random((5, 5), dtype=np.float32)}
    return lambda: kernel((rows, 2560), **inputs)


def classic_blur(threads: int):
    y, x, yo, yi = halo.vars("y x yo yi")
    _, by, funcs = blur.algorithm()
    by.split(y, yo, yi, 32).parallel(yo).vectorize(x, 8)
    funcs["blur_x"].store_at(by, yo).compute_at(by, x).vectorize(x, 8)
    kernel = by.compile(halo.Target("host", threads=threads))
    image = np.random.default_rng(0).random((1536, 2560), dtype=np.float32)
    return lambda: kernel((1536, 2560), inp=image)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=default_num_threads())
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    cases = {"ragged tiles 1536x2560": ragged_convolution(1536, args.threads),
             "ragged tiles 1535x2560": ragged_convolution(1535, args.threads),
             "classic blur 1536x2560": classic_blur(args.threads)}
    medians = side_by_side(cases, args.repeats, idle_s=0.02)
    print(f"{args.threads} thread(s), median of {args.repeats} interleaved calls")
    for name, seconds in medians.items():
        print(f"{name:26} {seconds * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
