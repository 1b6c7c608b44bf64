"""Matrix multiply C = A @ B through an RDom.

Algorithm, a hand schedule (register-blocked tiles, as a BLAS kernel does), and NumPy.
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
    """A register-blocked schedule, BLAS-style: C is cut into 32x24 tiles, one per
    parallel task; each 4x24 block of a tile accumulates in a `cache_write("local")`
    stage, C_local, whose update runs k outermost over the block: per k, 4 values of A
    (broadcast) times 3 vectors of a row of B, added into 12 vector accumulators that
    LLVM keeps in registers (the block is a constant 4x24 on the stack, every access at
    a constant offset once i and j are unrolled). C then copies the block out.

    Tiles are whole whenever C is at least 32x24 (shift_inwards tails), and halo then
    gives the block its constant size; smaller outputs run a clamped version.
    """
    i, j = halo.vars("i j")
    io, jo, ii, ji, iii, t = halo.vars("io jo ii ji iii t")
    C, k = funcs["C"], funcs["k"]
    C_local = C.cache_write("local")
    C.tile(i, j, io, jo, ii, ji, 32, 24).fuse(io, jo, t).parallel(t)
    C.split(ii, ii, iii, 4).vectorize(ji, 8).unroll(ji).unroll(iii)
    C_local.compute_at(C, ii).vectorize(j, 8).unroll(i)
    C_local.update(0).reorder(k.x, i, j).vectorize(j, 8).unroll(j).unroll(i)


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
