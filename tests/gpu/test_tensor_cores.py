"""Tensor-core intrinsics on a GPU, beyond the app's schedule: operands read straight from
global memory, where the WMMA path is taken only when the rows and tiles are aligned as it
needs (checked at run time) and the warp's lanes compute the tile element by element
otherwise; against halo.reference."""
import numpy as np
import pytest

import halo
from apps import matmul
from halo import intrinsics

RNG = np.random.default_rng(5)


def _global_operands():
    A, B, C, funcs = matmul.algorithm_fp16()
    i, j = C.args
    k = funcs["k"]
    io, jo, ii, ji, ko, ki, r, tx, wi, wj, ti, tj = halo.vars(
        "io jo ii ji ko ki r tx wi wj ti tj")
    mma = intrinsics.mma_f16_f32(16, 32, 16)
    acc = C.cache_write("shared")
    C.tile(i, j, io, jo, ii, ji, 32, 64).gpu_blocks(io, jo).split(ji, r, tx, 32)
    C.reorder(io, jo, tx, ii, r).gpu_threads(tx)
    acc.compute_at(C, jo).tile(i, j, wi, wj, ti, tj, 16, 32).gpu_threads(wi, wj)
    acc.tensorize(ti, mma)
    acc.update(0).split(k, ko, ki, 16).tile(i, j, wi, wj, ti, tj, 16, 32) \
        .reorder(ko, wi, wj, ti, tj, ki).gpu_threads(wi, wj).tensorize(ti, mma)
    return A, B, C


@pytest.mark.parametrize(("n", "k", "m"), [(32, 64, 64), (45, 36, 70), (40, 40, 96)],
                         ids=["aligned", "rows-of-36", "rows-of-40"])
def test_operands_in_global_memory(n, k, m):
    """k = 64: A's rows are 128 bytes apart, every tile aligned: WMMA. k = 36: rows 72
    bytes apart (not a multiple of 16): the lanes' path. k = 40: rows 80 bytes apart, so
    only every other 16-row tile is 32-byte aligned: both paths in one run."""
    A, B, C = _global_operands()
    a = (RNG.random((n, k)) - 0.5).astype(np.float16)
    b = (RNG.random((k, m)) - 0.5).astype(np.float16)
    inputs = {A: a, B: b}
    np.testing.assert_allclose(C.realize((n, m), inputs=inputs, target="cuda"),
                               halo.reference(C, (n, m), inputs=inputs), rtol=1e-3, atol=1e-3)
