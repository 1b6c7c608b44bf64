"""storage_folding: a sliding Func keeps only the rows its window needs, addressed
modulo a constant fold; storage stays unfolded when that isn't provably safe."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from halo.ir import nodes as n

from .conftest import lower_until, nodes_of

y, x, yo, yi = halo.vars("y x yo yi")


def stencil(taps, split=16, parallel=False, bound=None):
    inp = halo.ImageParam(halo.float32, 2, "inp")
    c = halo.boundary.repeat_edge(inp)
    bx, out = halo.Func("blur_x"), halo.Func("out")
    bx[y, x] = c[y, x - 1] + c[y, x + 1]
    out[y, x] = sum(bx[y + t, x] for t in taps)
    out.split(y, yo, yi, split)
    if parallel:
        out.parallel(yi)
    bx.compute_at(out, yi).store_at(out, yo)
    if bound is not None:
        bx.bound(y, *bound)
    return inp, out


def realizes_of(stmt: n.Stmt, name: str) -> list[n.Realize]:
    """Every Realize of `name`: a consumer split with shift_inwards over an extent that
    may be smaller than the split has a whole-tile nest and a clamped one, each with its
    own."""
    realizes = nodes_of(stmt, n.Realize, name)
    assert realizes
    return realizes


def check(inp, out, shape):
    img = np.random.default_rng(shape[0]).random(shape, dtype=np.float32)
    np.testing.assert_allclose(out.realize(shape, inputs={inp: img}),
                               halo.reference(out, shape, inputs={inp: img}),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("taps,fold", [((-1, 0, 1), 4), ((-2, -1, 0, 1, 2), 8),
                                       ((0,), 1), ((-3, 1), 8), ((0, 1), 2)])
def test_the_window_dimension_is_folded_to_a_power_of_two(taps, fold):
    """The rows dimension of blur_x becomes [0, fold), fold the smallest power of two at
    least the window (max(taps) - min(taps) + 1 rows); every access is taken % fold."""
    _, out = stencil(taps)
    stmt, _ = lower_until(out, "storage_folding")
    for r in realizes_of(stmt, "blur_x"):
        assert r.bounds[0] == (n.const(0), n.const(fold))
        accesses = [*nodes_of(r.body, n.Provide, "blur_x"),
                    *nodes_of(r.body, n.Call, "blur_x")]
        assert len(accesses) == 1 + len(taps)
        assert all(a.args[0] == n.Mod(a.args[0].a, n.const(fold)) for a in accesses)


@pytest.mark.parametrize("taps", [(-1, 0, 1), (-2, -1, 0, 1, 2), (-3, 1), (2, 5)])
@pytest.mark.parametrize("height", [1, 15, 17, 53])
def test_folded_storage_matches_the_reference(taps, height):
    """Awkward heights (prime, not a multiple of the split, 1, less than a strip)."""
    inp, out = stencil(taps)
    check(inp, out, (height, 7))


def test_a_parallel_loop_leaves_storage_unfolded():
    """No sliding across a parallel loop, so no folding: concurrent iterations would
    overwrite each other's rows."""
    inp, out = stencil((-1, 0, 1), split=4, parallel=True)
    stmt, _ = lower_until(out, "storage_folding")
    assert all(r.bounds[0][0] == n.Var("blur_x.min.0") for r in realizes_of(stmt, "blur_x"))
    check(inp, out, (11, 5))


def test_a_parallel_specialization_leaves_storage_unfolded():
    """Each copy of blur_x's produce (here one per specialization of out) decides alone
    whether it slides: the parallel one doesn't, and computes its whole window at each
    row, so the storage they share stays unfolded (folded to the serial copy's window,
    the parallel rows overwrote each other's)."""
    inp = halo.ImageParam(halo.int32, 2, "inp")
    bx, out = halo.Func("blur_x"), halo.Func("out")
    bx[y, x] = inp[y, x] * 2
    out[y, x] = bx[y - 1, x] + bx[y, x] + bx[y + 1, x]
    out.specialize(inp.shape[1] >= 4).parallel(y)
    bx.compute_at(out, y).store_root()
    stmt, ctx = lower_until(out, "storage_folding")
    assert "blur_x" in ctx.sliding_windows
    assert all(r.bounds[0][0] == n.Var("blur_x.min.0") for r in realizes_of(stmt, "blur_x"))
    img = np.arange(131 * 257, dtype=np.int32).reshape(131, 257)
    for shape in ((129, 257), (129, 3), (1, 5)):
        np.testing.assert_array_equal(
            out.realize(shape, inputs={inp: img}, origin=(1, 0)),
            halo.reference(out, shape, inputs={inp: img}, origin=(1, 0)))


def test_a_window_without_a_constant_extent_stays_unfolded():
    """out[y] reads blur_x[0] and blur_x[y]: the window [0, y] slides (its max grows) but
    its extent is not bounded by a constant, so every row stays stored."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    c = halo.boundary.repeat_edge(inp)
    bx, out = halo.Func("blur_x"), halo.Func("out")
    bx[y, x] = c[y, x] * 2
    out[y, x] = bx[0, x] + bx[y, x]
    bx.store_root().compute_at(out, y)
    stmt, ctx = lower_until(out, "storage_folding")
    assert "blur_x" in ctx.sliding_windows
    assert all(r.bounds[0][0] == n.Var("blur_x.min.0") for r in realizes_of(stmt, "blur_x"))
    for height in (1, 9):
        check(inp, out, (height, 3))


def test_a_bound_dimension_stays_unfolded():
    """bound() fixes the storage of blur_x's rows, so it isn't folded."""
    inp, out = stencil((-1, 0, 1), split=4, bound=(-1, 14))
    stmt, _ = lower_until(out, "storage_folding")
    assert all(r.bounds[0][0] == n.Var("blur_x.min.0") for r in realizes_of(stmt, "blur_x"))
    check(inp, out, (12, 5))


def test_a_compute_site_that_does_not_slide_leaves_storage_unfolded():
    """blur_x stored at root and computed per row of out; out specialized to run its rows
    in parallel when p > 0. The serial branch slides along the rows, the parallel one
    can't: all its iterations share the storage, so folding it to 4 rows (as the serial
    branch alone would allow) would let one row's thread overwrite another's rows."""
    inp = halo.ImageParam(halo.int32, 2, "inp")
    p = halo.Param(halo.int32, "p", 0)
    c = halo.boundary.repeat_edge(inp)
    bx, out = halo.Func("blur_x"), halo.Func("out")
    bx[y, x] = c[y, x - 1] + c[y, x] * 3 + c[y, x + 1]
    out[y, x] = bx[y - 1, x] + bx[y, x] * 5 + bx[y + 1, x]
    out.specialize(p > 0).parallel(y)
    bx.store_root().compute_at(out, y)
    stmt, ctx = lower_until(out, "storage_folding")
    assert len(ctx.sliding_windows["blur_x"]) == 1  # the serial branch's
    assert all(r.bounds[0][0] == n.Var("blur_x.min.0") for r in realizes_of(stmt, "blur_x"))
    kernel = out.compile(halo.Target("host", threads=4))
    for shape in [(1, 1), (37, 5), (601, 67)]:
        img = np.random.default_rng(shape[0]).integers(-100, 100, shape, dtype=np.int32)
        for value in (0, 1):
            np.testing.assert_array_equal(kernel(shape, inp=img, p=value),
                                          halo.reference(out, shape, inputs={inp: img,
                                                                             p: value}))


@pytest.mark.parametrize("shape", [(64, 40), (45, 19), (3, 8), (1, 1)])
def test_the_classic_blur_keeps_four_rows_of_each_strip(shape):
    """Halide's classic blur: blur_x stored per strip of 32 rows and computed at the outer
    x of out's vectors slides along the strip's rows (yi), in the whole-tile nest and the
    clamped one alike, so its storage folds to 4 rows of the strip's width."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    c = halo.boundary.repeat_edge(inp)
    bx, out = halo.Func("blur_x"), halo.Func("out")
    bx[y, x] = (c[y, x - 1] + c[y, x] + c[y, x + 1]) / 3
    out[y, x] = (bx[y - 1, x] + bx[y, x] + bx[y + 1, x]) / 3
    out.split(y, yo, yi, 32).parallel(yo).vectorize(x, 8)
    bx.store_at(out, yo).compute_at(out, x).vectorize(x, 8)
    stmt, ctx = lower_until(out, "storage_folding")
    windows = ctx.sliding_windows["blur_x"]
    assert len(windows) == 2 and {(w.loop, w.dim) for w in windows} == {("out.s0.y.yi", 0)}
    assert all(r.bounds[0] == (n.const(0), n.const(4)) for r in realizes_of(stmt, "blur_x"))
    check(inp, out, shape)
