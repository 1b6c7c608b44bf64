"""Row-wise softmax of a 4096 x 1024 matrix, with its reductions as RDom updates.

    row_max[i] = max_j x[i, j]
    e[i, j]    = exp(x[i, j] - row_max[i])        (subtracting the max keeps exp finite)
    row_sum[i] = sum_j e[i, j]
    out[i, j]  = e[i, j] / row_sum[i]

Run `python -m apps.softmax`.

The schedule is one row per task: the rows are independent, and one row's stages (4 KB
each) stay in L1 between the three passes over it. Per row, the max and the sum are
computed right before they are needed (`compute_at` the row), and `e` is computed once,
vectorized, into a row buffer that both the sum and the output read, so each `exp` runs
once. The output's divide is vectorized. The two reductions are serial loops: running
them across SIMD lanes reassociates them, which needs `rfactor` (not in halo yet); it
will split each row's reduction into 8 partial lanes reduced at the end.
"""
from __future__ import annotations

import numpy as np

import halo

VECTOR = 8


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
    out = halo.Func("softmax")
    out[i, j] = e[i, j] / row_sum[i]
    return x, out, {"softmax": out, "row_sum": row_sum, "e": e, "row_max": row_max, "r": r}


def schedule(funcs) -> None:
    """One row per parallel iteration; e computed once per row and vectorized."""
    i, j = halo.vars("i j")
    out = funcs["softmax"]
    out.parallel(i).vectorize(j, VECTOR)
    funcs["e"].compute_at(out, i).vectorize(funcs["e"].args[-1], VECTOR)
    funcs["row_max"].compute_at(out, i)
    funcs["row_sum"].compute_at(out, i)


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def make_inputs(shape=(4096, 1024), seed: int = 0) -> dict[str, np.ndarray]:
    """Logits of spread about 3, so rows are far from uniform."""
    return {"x": np.random.default_rng(seed).standard_normal(shape, dtype=np.float32) * 3}


def main(shape=(4096, 1024), repeats: int = 5) -> dict:
    from apps.timing import check_and_time
    _, out, funcs = algorithm()
    schedule(funcs)
    return check_and_time("softmax", "x".join(map(str, shape)), out.compile(), shape,
                          make_inputs(shape), numpy_softmax, repeats, rtol=1e-4, atol=1e-7)

if __name__ == "__main__":
    print(main())
