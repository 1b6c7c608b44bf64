"""Every schedule of a separable blur computes what the algorithm means.

Sizes are awkward on purpose: 1, primes, and extents that splits don't divide."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from apps import blur
from apps.blur import numpy_blur

from .conftest import assert_matches_reference

SHAPES = [(1, 1), (7, 13), (37, 53)]


def blur_pipeline():
    """The blur app's algorithm: (input, blur_x, blur_y)."""
    inp, out, funcs = blur.algorithm()
    return inp, funcs["blur_x"], out


y, x, yo, xo, yi, xi, t = halo.vars("y x yo xo yi xi t")


def _inline(bx, by):
    pass
def _root(bx, by):
    bx.compute_root()
def _at_y(bx, by):
    bx.compute_at(by, y)
def _at_x(bx, by):
    bx.compute_at(by, x)
def _split_guard(bx, by):
    by.split(x, xo, xi, 4, tail="guard")
    bx.compute_at(by, xo)
def _split_shift(bx, by):
    by.split(x, xo, xi, 5, tail="shift_inwards")
def _split_round_up_inner(bx, by):
    bx.compute_root().split(x, xo, xi, 8, tail="round_up")
def _split_auto_nested(bx, by):
    by.split(x, xo, xi, 8).split(xo, xo, t, 2)
def _split_reuse_name(bx, by):
    by.split(x, x, xi, 3)
    bx.compute_at(by, x)
def _tile(bx, by):
    by.tile(y, x, yo, xo, yi, xi, 4, 8)
    bx.compute_at(by, xo)
def _tile_store_at(bx, by):
    by.tile(y, x, yo, xo, yi, xi, 4, 8)
    bx.store_at(by, yo).compute_at(by, yi)
def _store_root(bx, by):
    bx.store_root().compute_at(by, y)
def _reorder(bx, by):
    by.reorder(x, y)
    bx.compute_root().reorder(x, y)
def _fuse(bx, by):
    by.fuse(y, x, t)
    bx.compute_root()
def _fuse_then_split(bx, by):
    by.fuse(y, x, t).split(t, t, xi, 16, tail="guard")
def _vectorize(bx, by):
    by.vectorize(x, 8)
    bx.compute_at(by, y).vectorize(x, 4)
def _unroll(bx, by):
    by.split(x, xo, xi, 3, tail="guard").unroll(xi)
    bx.compute_at(by, xo)
def _unroll_n(bx, by):
    by.unroll(x, 2)
def _parallel(bx, by):
    by.parallel(y)
    bx.compute_at(by, y).parallel(x)
def _parallel_task(bx, by):
    by.parallel(y, 4)
def _api_md(bx, by):
    by.tile(y, x, yo, xo, yi, xi, 32, 256).parallel(yo).vectorize(xi, 8)
    bx.compute_at(by, xo).vectorize(x, 8)


SCHEDULES = [_inline, _root, _at_y, _at_x, _split_guard, _split_shift,
             _split_round_up_inner, _split_auto_nested, _split_reuse_name, _tile,
             _tile_store_at, _store_root, _reorder, _fuse, _fuse_then_split, _vectorize,
             _unroll, _unroll_n, _parallel, _parallel_task, _api_md]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("sched", SCHEDULES, ids=lambda f: f.__name__.strip("_"))
def test_blur_schedule(sched, shape):
    """The scheduled blur equals the reference and NumPy on an awkward size."""
    inp, bx, by = blur_pipeline()
    sched(bx, by)
    image = np.random.default_rng(1).random(shape, dtype=np.float32)
    assert_matches_reference(by, shape, {inp: image}, numpy_blur(image))


def test_blur_with_origin():
    """A realized region that doesn't start at 0 reads the matching part of the input."""
    inp, bx, by = blur_pipeline()
    bx.compute_root()
    image = np.random.default_rng(2).random((20, 30), dtype=np.float32)
    got = assert_matches_reference(by, (5, 7), {inp: image}, origin=(3, 11))
    np.testing.assert_allclose(got, numpy_blur(image)[3:8, 11:18], rtol=1e-5)


def test_bound_gives_constant_extents_and_is_checked():
    """bound() on an output fixes its loops (so a whole-row vectorize is legal), and a
    realized region outside the bound is refused."""
    inp, bx, by = blur_pipeline()
    by.bound(x, 0, 16).vectorize(x)
    bx.compute_at(by, y).bound(y, -1, 40)  # blur_y reads rows -1 .. height of blur_x
    image = np.random.default_rng(3).random((9, 16), dtype=np.float32)
    assert_matches_reference(by, (9, 16), {inp: image}, numpy_blur(image))
    with pytest.raises(halo.BoundsError, match=r"blur_y.bound\(...\) fixes dimension 1 to "
                                                r"\[0, 15\], but \[0, 16\] of it is used"):
        by.realize((9, 17), inputs={inp: np.zeros((9, 17), np.float32)})
    with pytest.raises(halo.BoundsError, match=r"blur_x.bound\(...\) fixes dimension 0"):
        by.realize((40, 16), inputs={inp: np.zeros((40, 16), np.float32)})


def test_explicit_inline_serial_and_store_root():
    """compute_inline, serial and store_root schedules leave the result unchanged."""
    inp, bx, by = blur_pipeline()
    by.vectorize(x, 4).serial(x)
    bx.compute_inline()
    image = np.random.default_rng(4).random((6, 11), dtype=np.float32)
    assert_matches_reference(by, (6, 11), {inp: image}, numpy_blur(image))


def test_guard_inside_a_shifted_split_bounds_the_writes():
    """A guarded split of the inner loop of a shifted split, then a shifted split of the
    outer one: the writes stay inside the output (found by random schedules)."""
    inp, bx, by = blur_pipeline()
    v1, v2 = halo.vars("v1 v2")
    by.split(y, y, v1, 3).split(v1, v1, v2, 2, tail="guard").unroll(y, 2)
    image = np.random.default_rng(5).random((11, 5), dtype=np.float32)
    assert_matches_reference(by, (11, 5), {inp: image}, numpy_blur(image))
