"""Update definitions and reductions under schedules, against the reference and NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import apps.matmul
import halo

from .conftest import assert_matches_reference

i, j, io, jo, ii, ji, x, xo, xi, t = halo.vars("i j io jo ii ji x xo xi t")
ko, ki = halo.vars("ko ki")


def matmul():
    """The matmul app's algorithm: (A, B, k, C)."""
    A, B, C, funcs = apps.matmul.algorithm()
    return A, B, funcs["k"], C


def _default(C, k):
    pass
def _reorder_rvar_out(C, k):
    C.update(0).reorder(k.x, i, j)
def _reorder_rvar_mid(C, k):
    C.update(0).reorder(i, k.x, j)
def _tile_update(C, k):
    C.update(0).tile(i, j, io, jo, ii, ji, 4, 8).reorder(io, jo, ii, k.x, ji)
def _split_rvar(C, k):
    C.update(0).split(k.x, ko, ki, 4).unroll(ki)
def _split_pure_stage(C, k):
    C.split(j, jo, ji, 5).vectorize(ji)
def _fuse_update(C, k):
    C.update(0).fuse(i, j, t).parallel(t)
def _vectorize_update(C, k):
    C.update(0).reorder(i, k.x, j).vectorize(j, 4)


@pytest.mark.parametrize("sched", [_default, _reorder_rvar_out, _reorder_rvar_mid,
                                   _tile_update, _split_rvar, _split_pure_stage,
                                   _fuse_update, _vectorize_update],
                         ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("m,kk,nn", [(1, 1, 1), (7, 5, 13), (17, 11, 9)])
def test_matmul(sched, m, kk, nn):
    """C = A @ B through an RDom, for each schedule of the update."""
    A, B, k, C = matmul()
    sched(C, k)
    rng = np.random.default_rng(3)
    a = rng.random((m, kk), dtype=np.float32)
    b = rng.random((kk, nn), dtype=np.float32)
    assert_matches_reference(C, (m, nn), {A: a, B: b}, a @ b, rtol=1e-5)


def test_matmul_inline_sum_in_a_consumer():
    """halo.sum inside a consumer, with the intermediate computed at the consumer's rows."""
    A = halo.ImageParam(halo.float32, 2, "A")
    B = halo.ImageParam(halo.float32, 2, "B")
    k = halo.RDom((0, 6), name="k")
    out = halo.Func("out")
    out[i, j] = halo.sum(A[i, k] * B[k, j]) * 2.0
    rng = np.random.default_rng(4)
    a, b = rng.random((5, 6), dtype=np.float32), rng.random((6, 7), dtype=np.float32)
    assert_matches_reference(out, (5, 7), {A: a, B: b}, 2 * (a @ b))


@pytest.mark.parametrize("split", [None, 5, 16])
def test_histogram_scatter(split):
    """A histogram of uint8 pixels via a scatter update, optionally splitting the RDom."""
    inp = halo.ImageParam(halo.uint8, 2, "inp")
    r = halo.RDom(inp, name="r")
    hist = halo.Func("hist")
    hist[x] = 0
    hist[halo.cast(halo.int32, inp[r.x, r.y])] += 1
    if split:
        hist.update(0).split(r.y, xo, xi, split)
    image = np.random.default_rng(5).integers(0, 256, (19, 23), dtype=np.uint8)
    expected = np.bincount(image.ravel(), minlength=256).astype(np.int32)
    assert_matches_reference(hist, (256,), {inp: image}, expected)


def test_histogram_as_intermediate():
    """A histogram computed at root and read by a cumulative sum (a scan over an RDom)."""
    inp = halo.ImageParam(halo.uint8, 1, "inp")
    r = halo.RDom(inp, name="r")
    hist2 = halo.Func("hist2")
    hist2[x] = 0
    hist2[halo.cast(halo.int32, inp[r])] += 1
    cdf = halo.Func("cdf")
    s = halo.RDom((1, 255), name="s")
    cdf[x] = hist2[x]
    cdf[s] = cdf[s - 1] + hist2[s]
    data = np.random.default_rng(6).integers(0, 256, 101, dtype=np.uint8)
    expected = np.cumsum(np.bincount(data, minlength=256)).astype(np.int32)
    assert_matches_reference(cdf, (256,), {inp: data}, expected)


def test_prefix_sum_recurrence_split_guard():
    """A recurrence over an RDom stays sequential when its RVar is split."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    r = halo.RDom((1, inp.shape[0] - 1), name="r")
    f = halo.Func("f")
    f[x] = inp[x]
    f[r] = f[r - 1] + inp[r]
    f.update(0).split(r.x, xo, xi, 4)
    data = np.arange(1, 18, dtype=np.int32)
    assert_matches_reference(f, (17,), {inp: data}, np.cumsum(data).astype(np.int32))


def test_rdom_where_and_inline_reductions():
    """maximum/minimum/product and RDom.where agree with NumPy."""
    inp = halo.ImageParam(halo.int32, 2, "inp")
    r = halo.RDom((0, inp.shape[1]), name="r")
    mx, mn, pr, evens = (halo.Func(nm) for nm in ("mx", "mn", "pr", "evens"))
    mx[i] = halo.maximum(inp[i, r])
    mn[i] = halo.minimum(inp[i, r])
    pr[i] = halo.product(inp[i, r] % 3 + 1)
    r2 = halo.RDom((0, inp.shape[1]), name="r2")
    r2.where(inp[i, r2] % 2 == 0)
    evens[i] = 0
    evens[i] += inp[i, r2]
    data = np.random.default_rng(7).integers(-50, 50, (6, 9), dtype=np.int32)
    assert_matches_reference(mx, (6,), {inp: data}, data.max(axis=1))
    assert_matches_reference(mn, (6,), {inp: data}, data.min(axis=1))
    assert_matches_reference(pr, (6,), {inp: data},
                             np.prod(data % 3 + 1, axis=1).astype(np.int32))
    assert_matches_reference(evens, (6,), {inp: data},
                             np.where(data % 2 == 0, data, 0).sum(axis=1).astype(np.int32))
