"""Matrix multiply C = A @ B through an RDom.

Algorithm, a hand schedule (parallel rows, the reduction outside a contiguous vectorized
inner loop), and NumPy.
Run `python -m apps.matmul`.
"""
from __future__ import annotations

import numpy as np

import halo


def algorithm():
    """Returns (A, B, C, {name: Func or RDom}) with C[i, j] = sum_k A[i, k] * B[k, j]."""
    i, j = halo.vars("i j")
    A = halo.ImageParam(halo.float32, 2, "A")
    B = halo.ImageParam(halo.float32, 2, "B")
    k = halo.RDom((0, A.shape[1]), name="k")
    C = halo.Func("C")
    C[i, j] = 0.0
    C[i, j] += A[i, k] * B[k, j]
    return A, B, C, {"C": C, "k": k}


def schedule(funcs) -> None:
    """The i-k-j order, one row of C per parallel iteration: for each row, accumulate the
    rows of B scaled by A[i, k], so the innermost loop streams contiguous rows of B and C
    in SIMD vectors.

    The vectorized loop of the update is split by 8 with a guard (an update can't
    recompute points); partition_loops gives it a guard-free steady state and a masked
    last vector. This is not yet a register-blocked schedule (see benchmarks/ for how far
    it is from BLAS).
    """
    i, j = halo.vars("i j")
    C, k = funcs["C"], funcs["k"]
    C.parallel(i).vectorize(j, 8)
    C.update(0).reorder(i, k.x, j).parallel(i).vectorize(j, 8)


def main(n: int = 512, repeats: int = 3) -> dict:
    from apps.timing import check_and_time
    rng = np.random.default_rng(0)
    inputs = {"A": rng.random((n, n), dtype=np.float32),
              "B": rng.random((n, n), dtype=np.float32)}
    *_, C, funcs = algorithm()
    schedule(funcs)
    row = check_and_time("matmul", f"{n}^3", C.compile(), (n, n), inputs,
                         lambda A, B: A @ B, repeats, rtol=1e-4, atol=1e-3)
    return {**row, "halo_gflops": 2 * n**3 / row["halo_s"] / 1e9}

if __name__ == "__main__":
    print(main())
