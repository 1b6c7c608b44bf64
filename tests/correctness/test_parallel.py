"""Schedules with parallel loops compute what the reference computes, on any number of
threads. Sizes are awkward on purpose: 1, primes, extents that task sizes don't divide."""
from __future__ import annotations

import numpy as np
import pytest

import apps.matmul
import halo
from apps import blur

from .conftest import assert_matches_reference

y, x, yo, xo, yi, xi, i, j = halo.vars("y x yo xo yi xi i j")


@pytest.fixture(params=[1, 3], ids=lambda threads: f"{threads} threads")
def threads(request, monkeypatch) -> int:
    """Runs the test with HALO_NUM_THREADS, the default thread count, at 1 (a team of one)
    and 3 (an odd team, whose chunks of most extents differ in size)."""
    monkeypatch.setenv("HALO_NUM_THREADS", str(request.param))
    return request.param


def _parallel_rows(bx, by):
    by.parallel(y)
    bx.compute_at(by, y)
def _parallel_tasks_of_four_rows(bx, by):
    by.parallel(y, 4)
    bx.compute_root().parallel(y, 4)
def _parallel_tiles_compute_at(bx, by):
    by.tile(y, x, yo, xo, yi, xi, 4, 8).parallel(yo)
    bx.compute_at(by, xo)
def _parallel_tiles_store_at(bx, by):
    by.tile(y, x, yo, xo, yi, xi, 4, 8).parallel(yo)
    bx.store_at(by, yo).compute_at(by, yi)
def _nested_parallel(bx, by):
    by.parallel(y).parallel(x)
    bx.compute_at(by, y).parallel(x)
def _app_schedule(bx, by):
    blur.schedule({"blur_x": bx, "blur_y": by})


@pytest.mark.parametrize("schedule", [_parallel_rows, _parallel_tasks_of_four_rows,
                                      _parallel_tiles_compute_at, _parallel_tiles_store_at,
                                      _nested_parallel, _app_schedule],
                         ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (37, 53)], ids=str)
def test_parallel_blur(schedule, shape, threads):
    """The blur app's algorithm, its parallel loops at several levels of the nest."""
    inp, by, funcs = blur.algorithm()
    schedule(funcs["blur_x"], by)
    image = np.random.default_rng(1).random(shape, dtype=np.float32)
    assert_matches_reference(by, shape, {inp: image}, blur.numpy_blur(image))


def _parallel_update_rows(C, k):
    C.update(0).parallel(i)
def _parallel_update_rows_ikj(C, k):
    C.parallel(i)
    C.update(0).reorder(i, k.x, j).parallel(i)
def _parallel_update_tasks(C, k):
    C.update(0).reorder(i, k.x, j).parallel(i, 3).vectorize(j, 4)


@pytest.mark.parametrize("schedule", [_parallel_update_rows, _parallel_update_rows_ikj,
                                      _parallel_update_tasks],
                         ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize(("m", "kk", "nn"), [(1, 1, 1), (7, 5, 13), (31, 17, 2)], ids=str)
def test_parallel_matmul_update(schedule, m, kk, nn, threads):
    """The matmul app's reduction, its update stage parallel over the pure var i."""
    A, B, C, funcs = apps.matmul.algorithm()
    schedule(C, funcs["k"])
    rng = np.random.default_rng(3)
    a = rng.random((m, kk), dtype=np.float32)
    b = rng.random((kk, nn), dtype=np.float32)
    assert_matches_reference(C, (m, nn), {A: a, B: b}, a @ b)


def test_target_threads_reach_the_generated_code(monkeypatch):
    """Target(threads=N) overrides HALO_NUM_THREADS and is the team size in the code."""
    monkeypatch.setenv("HALO_NUM_THREADS", "3")
    f = halo.Func("f")
    f[y, x] = y * 100 + x
    f.parallel(y)
    sources = {threads: halo.Pipeline(f).compile(halo.Target("host", threads)).source()
               for threads in (1, 2, None)}
    for threads, expected in [(1, 1), (2, 2), (None, 3)]:
        assert f"i32 {expected}, i32 0)" in sources[threads]
    rows, columns = np.indices((5, 3))
    np.testing.assert_array_equal(f.realize((5, 3), target=halo.Target("host", 2)),
                                  rows * 100 + columns)


@pytest.mark.parametrize("bad", [0, -1, 2.5])
def test_target_threads_must_be_positive(bad):
    """Target(threads=...) rejects what can't be a thread count."""
    with pytest.raises(halo.HaloError, match="threads must be a positive integer"):
        halo.Target("host", threads=bad)


def test_natural_vector_size_is_the_hosts_register_width():
    """One SIMD register's worth of lanes, in proportion to the type's size: 16 float32
    with AVX-512, 8 with AVX2, 4 with SSE; a vectorize by it runs correctly."""
    target = halo.Target("host")
    lanes = target.natural_vector_size(halo.float32)
    assert lanes in (4, 8, 16)
    assert target.natural_vector_size(halo.uint8) == 4 * lanes
    assert target.natural_vector_size(halo.float64) == lanes // 2
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f = halo.Func("f")
    f[x] = inp[x] * 2.0
    f.vectorize(x, lanes)
    data = np.arange(37, dtype=np.float32)
    np.testing.assert_array_equal(f.realize((37,), inputs={inp: data}), data * 2)
