"""A 256-bin histogram of a 4096 x 4096 uint8 image, by a scatter update over an RDom.

    hist[b] = 0
    hist[image[y, x]] += 1        for every pixel (y, x)

Run `python -m apps.histogram`.

The update can't simply run in parallel: two pixels of the same value would race on one
counter. The schedule uses `rfactor`: the rows are split into blocks of `ROWS`, and each
block counts into its own histogram (the intermediate `hist_intm[block, bin]`, blocks in
parallel, rows outside columns so the image streams through once in memory order, with
one block's 256 counters (1 KB) in L1); then the blocks' histograms are added, 8 bins at
a time (256 x blocks additions).
"""
from __future__ import annotations

import numpy as np

import halo
from apps.numpy_check import check_and_time

BINS = 256


def algorithm():
    """Returns (image, hist, {name: Func or RDom})."""
    b = halo.Var("b")
    image = halo.ImageParam(halo.uint8, 2, "image")
    r = halo.RDom(image, name="r")  # r.x: rows, r.y: columns
    hist = halo.Func("hist")
    hist[b] = halo.cast(halo.int32, 0)
    hist[halo.cast(halo.int32, image[r.x, r.y])] += 1
    return image, hist, {"hist": hist, "r": r}


ROWS = 64  # rows per block: 64 partial histograms of a 4096-row image, enough tasks


def schedule(funcs) -> None:
    """Partial histograms of blocks of rows in parallel (rfactor), then their sum."""
    b, u, ro, ri = halo.vars("b u ro ri")
    hist, r = funcs["hist"], funcs["r"]
    hist.vectorize(b, 8)
    hist.update(0).split(r.x, ro, ri, ROWS)
    intm = hist.update(0).rfactor(ro, u)
    intm.compute_root().vectorize(b, 8).update(0).parallel(u)
    hist.update(0).reorder(ro, b).vectorize(b, 8)


def gpu_schedule(funcs) -> None:
    """For target 'cuda': each block of 16 rows counts into a histogram of its own in
    shared memory (rfactor over blocks of rows; shared atomics from its 256 threads across
    the columns), then adds it into the result (one global atomicAdd per bin and block)."""
    b, bo, bi, u, ro, ri, co, ci = halo.vars("b bo bi u ro ri co ci")
    hist, r = funcs["hist"], funcs["r"]
    hist.gpu_tile(b, bo, bi, 256)
    hist.update(0).split(r.x, ro, ri, 16)
    partial = hist.update(0).rfactor(ro, u)
    hist.update(0).atomic().split(b, bo, bi, 256).reorder(ro, bo, bi)
    hist.update(0).gpu_blocks(ro).gpu_threads(bi)
    partial.compute_at(hist.update(0), ro).bound(b, 0, BINS).gpu_threads(b)
    partial.update(0).atomic().split(r.y, co, ci, 256).reorder(co, ci, ri)
    partial.update(0).gpu_threads(ci)


def numpy_histogram(image: np.ndarray) -> np.ndarray:
    return np.bincount(image.ravel(), minlength=BINS).astype(np.int32)


def make_inputs(shape=(4096, 4096), seed: int = 0) -> dict[str, np.ndarray]:
    """Smooth gradients plus noise: a natural image's uneven use of the bins."""
    rng = np.random.default_rng(seed)
    rows, columns = np.indices(shape, dtype=np.float32)
    base = 128 + 60 * np.sin(rows / 97) * np.cos(columns / 131)
    noise = rng.normal(0, 20, shape).astype(np.float32)
    return {"image": np.clip(base + noise, 0, 255).astype(np.uint8)}


def main(shape=(4096, 4096), repeats: int = 5) -> dict:
    _, hist, funcs = algorithm()
    schedule(funcs)
    return check_and_time("histogram", "x".join(map(str, shape)), hist.compile(), (BINS,),
                          make_inputs(shape), numpy_histogram, repeats)

if __name__ == "__main__":
    print(main())
