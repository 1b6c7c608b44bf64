"""Row-wise softmax of a 4096 x 1024 matrix, with its reductions as RDom updates.

    row_max[i] = max_j x[i, j]
    e[i, j]    = exp(x[i, j] - row_max[i])        (subtracting the max keeps exp finite)
    row_sum[i] = sum_j e[i, j]
    inverse[i] = 1 / row_sum[i]
    out[i, j]  = e[i, j] * inverse[i]

(one division a row, and a multiplication a point, as PyTorch computes it: a division a
point was a sixth of the GPU schedule's time, and a vector division costs the CPU several
multiplications).

Run `python -m apps.softmax`.

The schedule is one row per task: the rows are independent, and one row's stages (4 KB
each) stay in L1 between the three passes over it. Per row, the max and the sum are
computed right before they are needed (`compute_at` the row), as is the inverse of the sum
(once a row: inlined, it would be a division a point again), and `e` is computed once,
vectorized, into a row buffer that both the sum and the output read, so each `exp` runs
once (one libmvec call per vector). Each reduction runs across the SIMD lanes: `rfactor`
splits it into one partial max (or sum) per lane, a vector updated once per vector of
the row, whose lanes are then reduced. That reassociates the sum, as NumPy's pairwise
sum does too; serial, each add waits for the one before it, and the two reductions
took most of the time.
"""
from __future__ import annotations

import numpy as np

import halo
from apps.numpy_check import check_and_time


def vector() -> int:
    """One vector of float32 on this CPU."""
    return halo.Target("host").natural_vector_size(halo.float32)


def algorithm():
    """Returns (x, out, {name: Func or RDom})."""
    i, j = halo.vars("i j")
    x = halo.ImageParam(halo.float32, 2, "x")
    r = halo.RDom((0, x.shape[1]), name="r")
    row_max = halo.Func("row_max")
    row_max[i] = halo.float32.min_value()
    row_max[i] = halo.max(row_max[i], x[i, r])
    e = halo.Func("e")
    e[i, j] = halo.exp(x[i, j] - row_max[i])
    row_sum = halo.Func("row_sum")
    row_sum[i] = 0.0
    row_sum[i] += e[i, r]
    inverse = halo.Func("inverse")
    inverse[i] = 1 / row_sum[i]
    out = halo.Func("softmax")
    out[i, j] = e[i, j] * inverse[i]
    return x, out, {"softmax": out, "inverse": inverse, "row_sum": row_sum, "e": e,
                    "row_max": row_max, "r": r}


def schedule(funcs) -> None:
    """One row per parallel iteration; e computed once per row; everything vectorized,
    the reductions through rfactor."""
    i, j, u, ro, ri = halo.vars("i j u ro ri")
    lanes = vector()
    out = funcs["softmax"]
    out.parallel(i).vectorize(j, lanes)
    funcs["e"].compute_at(out, i).vectorize(j, lanes)
    funcs["inverse"].compute_at(out, i)
    for name in ("row_max", "row_sum"):
        reduction = funcs[name]
        reduction.compute_at(out, i)
        reduction.update(0).split(funcs["r"].x, ro, ri, lanes)
        partial = reduction.update(0).rfactor(ri, u)
        partial.compute_at(out, i).vectorize(u)
        partial.update(0).reorder(ro, u).vectorize(u)


def gpu_schedule(funcs, rows: int = 16, unroll: int = 32) -> None:
    """For target 'cuda': `rows` rows a block, a warp a row. Each reduction is a warp
    reduction: lane l of a row's warp combines columns l, l + 32, ... (coalesced,
    `unroll` loads in flight), then the 32 lanes combine theirs by shuffles, and the
    first lane stores the row's result in shared memory; the inverse of the sum is
    computed a row per thread, in shared memory too; e is inline, and the output is
    written by the same warps, 32 columns at a time."""
    i, j, io, ii, jo, ji, ro, ri, roo, roi = halo.vars("i j io ii jo ji ro ri roo roi")
    out = funcs["softmax"]
    out.split(i, io, ii, rows).split(j, jo, ji, 32).reorder(io, jo, ii, ji) \
        .gpu_blocks(io).gpu_threads(ii, ji)
    for name in ("row_max", "row_sum"):
        reduction = funcs[name]
        reduction.compute_at(out, io).gpu_threads(i)
        reduction.update(0).split(funcs["r"].x, ro, ri, 32).gpu_threads(ri) \
            .reorder(ri, ro).gpu_threads(i, ri).split(ro, roo, roi, unroll).unroll(roi)
    funcs["inverse"].compute_at(out, io).gpu_threads(i)


def gpu_schedule_partials(funcs, partials: int = 64) -> None:
    """For target 'cuda', without warp reductions: one row per block of 256 threads; e
    inline; each reduction through rfactor: `partials` threads reduce interleaved columns
    (coalesced), four loads in flight each, into shared memory, and the block's first
    thread merges them."""
    i, j, jo, ji, u, ro, ri, roo, roi = halo.vars("i j jo ji u ro ri roo roi")
    out = funcs["softmax"]
    out.split(j, jo, ji, 256).reorder(i, jo, ji).gpu_blocks(i).gpu_threads(ji)
    for name in ("row_max", "row_sum"):
        reduction = funcs[name]
        reduction.compute_at(out, i)
        reduction.update(0).split(funcs["r"].x, ro, ri, partials)
        partial = reduction.update(0).rfactor(ri, u)
        partial.compute_at(out, i).gpu_threads(u)
        partial.update(0).reorder(u, ro).split(ro, roo, roi, 4).gpu_threads(u).unroll(roi)
    funcs["inverse"].compute_at(out, i)


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def make_inputs(shape=(4096, 1024), seed: int = 0) -> dict[str, np.ndarray]:
    """Logits of spread about 3, so rows are far from uniform."""
    return {"x": np.random.default_rng(seed).standard_normal(shape, dtype=np.float32) * 3}


def main(shape=(4096, 1024), repeats: int = 5) -> dict:
    _, out, funcs = algorithm()
    schedule(funcs)
    return check_and_time("softmax", "x".join(map(str, shape)), out.compile(), shape,
                          make_inputs(shape), numpy_softmax, repeats, rtol=1e-4, atol=1e-7)

if __name__ == "__main__":
    print(main())
