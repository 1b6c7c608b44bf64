"""Reduction loops run out of order: in parallel, vectorized or reordered when halo proves
the iterations independent, and with atomic updates for scatters. Compared with the
reference (which ignores schedules) on awkward sizes."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from halo.ir import nodes
from halo.ir.visitor import walk

from .conftest import assert_matches_reference

y, x, ro, ri = halo.vars("y x ro ri")
SIZES = [(1, 1), (7, 13), (17, 5), (3, 29)]


def doubled_block():
    """f[r.x, r.y] = f[r.x, r.y] * 2 + 1: each iteration updates its own point."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom(inp, name="r")
    f = halo.Func("f")
    f[y, x] = inp[y, x]
    f[r.x, r.y] = f[r.x, r.y] * 2.0 + 1.0
    return inp, f, r


def column_sums():
    """g[y] = sum over x of inp[x, y] with r.x rows, r.y columns: r.y is independent."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom(inp, name="r")
    g = halo.Func("g")
    g[y] = 0.0
    g[r.y] += inp[r.x, r.y]
    return inp, g, r


@pytest.mark.parametrize("schedule", [
    lambda f, r: f.update(0).parallel(r.x),
    lambda f, r: f.update(0).vectorize(r.y, 4),
    lambda f, r: f.update(0).reorder(r.y, r.x).parallel(r.y).vectorize(r.x, 8),
    lambda f, r: f.update(0).split(r.x, ro, ri, 3).parallel(ro).vectorize(r.y, 4),
    lambda f, r: f.update(0).fuse(r.x, r.y, x).parallel(x, 5),
], ids=["parallel", "vectorize", "reorder_parallel_vectorize", "split", "fuse"])
def test_independent_points(schedule):
    """An update that writes a different point per iteration and reads only that point
    runs its reduction loops in any order."""
    for shape in SIZES:
        inp, f, r = doubled_block()
        schedule(f, r)
        a = np.random.default_rng(1).random(shape, dtype=np.float32)
        assert_matches_reference(f, shape, {inp: a}, a * 2 + 1)


@pytest.mark.parametrize("schedule", [
    lambda g, r: g.update(0).parallel(r.y),
    lambda g, r: g.update(0).vectorize(r.y, 4),
    lambda g, r: g.update(0).reorder(r.y, r.x).parallel(r.y),
    lambda g, r: g.update(0).split(r.y, ro, ri, 4).reorder(ro, ri, r.x).vectorize(ri),
], ids=["parallel", "vectorize", "reorder_parallel", "split_reorder_vectorize"])
def test_sums_over_an_independent_dimension(schedule):
    """Columns are summed independently: their loop runs in parallel or vectorized, and
    swapping it with the row loop keeps each column's order of additions."""
    for shape in SIZES:
        inp, g, r = column_sums()
        schedule(g, r)
        a = np.random.default_rng(2).random(shape, dtype=np.float32)
        assert_matches_reference(g, (shape[1],), {inp: a}, a.sum(axis=0), rtol=1e-5)


def test_vectorized_loop_around_the_reduction_loop():
    """C[i, j] += A[i, k] * B[k, j] with the vectorized j loop outside the k loop: k runs
    once with its body on vectors of j (the reduction loop inside is widened), on sizes
    that leave guarded tails."""
    i, j, jo, ji = halo.vars("i j jo ji")
    for n_i, n_j, n_k in [(1, 1, 1), (3, 7, 5), (5, 13, 2), (2, 16, 3)]:
        a_in = halo.ImageParam(halo.float32, 2, "A")
        b_in = halo.ImageParam(halo.float32, 2, "B")
        k = halo.RDom((0, a_in.shape[1]), name="k")
        c = halo.Func("C")
        c[i, j] = 0.0
        c[i, j] += a_in[i, k] * b_in[k, j]
        c.update(0).split(j, jo, ji, 4).reorder(i, jo, ji, k.x).vectorize(ji)
        rng = np.random.default_rng(n_i * 100 + n_j)
        a = rng.random((n_i, n_k), dtype=np.float32)
        b = rng.random((n_k, n_j), dtype=np.float32)
        assert_matches_reference(c, (n_i, n_j), {a_in: a, b_in: b}, a @ b, rtol=1e-5)
        stmt = c.lower().stmt
        assert not any(isinstance(s, nodes.For) and s.name.endswith(".ji") for s in walk(stmt))


def histogram(dtype=halo.int32):
    image = halo.ImageParam(halo.uint8, 2, "image")
    r = halo.RDom(image, name="r")
    b = halo.Var("b")
    hist = halo.Func("hist")
    hist[b] = halo.cast(dtype, 0)
    hist[halo.cast(halo.int32, image[r.x, r.y])] += halo.cast(dtype, 1)
    return image, hist, r


ATOMIC_SCHEDULES = {
    "parallel": lambda s, r: s.parallel(r.x),
    "vectorize": lambda s, r: s.vectorize(r.y, 8),
    "parallel_vectorize": lambda s, r: s.split(r.x, ro, ri, 3).parallel(ro).vectorize(r.y, 4),
    "reorder_parallel": lambda s, r: s.reorder(r.y, r.x).parallel(r.y),
}


@pytest.mark.parametrize("name", list(ATOMIC_SCHEDULES))
@pytest.mark.parametrize("dtype", [halo.int32, halo.uint8, halo.int64, halo.uint16],
                         ids=str)
def test_atomic_histogram(name, dtype):
    """A scatter of +1 into 256 bins with atomic updates: exact for integers, also when
    the counts of an 8-bit type wrap around."""
    rng = np.random.default_rng(5)
    for shape in [(1, 1), (61, 37), (257, 101)]:
        image, hist, r = histogram(dtype)
        ATOMIC_SCHEDULES[name](hist.update(0).atomic(), r)
        img = rng.integers(0, 256, shape).astype(np.uint8)
        expected = np.bincount(img.ravel(), minlength=256).astype(dtype.numpy)
        assert_matches_reference(hist, (256,), {image: img}, expected)


def test_atomic_float_sum():
    """Float atomics (fadd) sum into few bins; the order of the additions varies, so the
    result matches within a tolerance."""
    values = halo.ImageParam(halo.float32, 1, "values")
    bins = halo.ImageParam(halo.int32, 1, "bins")
    r = halo.RDom(values, name="r")
    s = halo.Func("s")
    s[x] = 0.0
    s[halo.clamp(bins[r], 0, 6)] += values[r]
    s.update(0).atomic().parallel(r.x, 97)
    rng = np.random.default_rng(7)
    v = rng.random(100_003, dtype=np.float32)
    k = rng.integers(0, 7, 100_003).astype(np.int32)
    expected = np.bincount(k, weights=v.astype(np.float64), minlength=7).astype(np.float32)
    assert_matches_reference(s, (7,), {values: v, bins: k}, expected, rtol=1e-4)


@pytest.mark.parametrize("op,dtype", [
    (op, t) for op in ("product", "min", "max") for t in (halo.int32, halo.float32)
] + [("xor", halo.int32)], ids=str)
def test_atomic_compare_and_swap(op, dtype):
    """Operators without an atomicrmw of their own (or not for floats) retry a
    compare-and-swap; integers are exact."""
    inp = halo.ImageParam(dtype, 1, "inp")
    idx = halo.ImageParam(halo.int32, 1, "idx")
    r = halo.RDom(inp, name="r")
    f = halo.Func("f")
    f[x] = halo.cast(dtype, 1)
    i = halo.clamp(idx[r], 0, 4)
    update = {"product": lambda a, e: a * e, "min": halo.min, "max": halo.max,
              "xor": lambda a, e: a ^ e}[op]
    f[i] = update(f[i], inp[r])
    f.update(0).atomic().parallel(r.x, 64)
    rng = np.random.default_rng(11)
    for n in (1, 5003):
        if dtype.is_float:
            a = rng.uniform(0.999, 1.001, n).astype(np.float32)
        else:
            a = rng.choice(np.array([-1, 1, 3, 7], np.int32), n)
        k = rng.integers(0, 5, n).astype(np.int32)
        assert_matches_reference(f, (5,), {inp: a, idx: k}, rtol=1e-3)


def test_allow_race_conditions_when_every_write_agrees():
    """allow_race_conditions: the user asserts the order doesn't matter (every iteration
    writes the same value to its point), and it runs in parallel."""
    image = halo.ImageParam(halo.uint8, 2, "image")
    r = halo.RDom(image, name="r")
    seen = halo.Func("seen")
    seen[x] = halo.cast(halo.uint8, 0)
    seen[halo.cast(halo.int32, image[r.x, r.y])] = halo.cast(halo.uint8, 1)
    seen.update(0).allow_race_conditions().parallel(r.x).vectorize(r.y, 4)
    img = np.random.default_rng(3).integers(0, 200, (37, 19)).astype(np.uint8)
    expected = np.zeros(256, np.uint8)
    expected[img.ravel()] = 1
    assert_matches_reference(seen, (256,), {image: img}, expected)


@pytest.mark.parametrize("schedule", [
    lambda d, r: d.update(0).parallel(r.y),
    lambda d, r: d.update(0).vectorize(r.y, 4),
    lambda d, r: d.update(0).split(r.y, ro, ri, 3).parallel(ro).vectorize(ri),
], ids=["parallel", "vectorize", "split_parallel_vectorize"])
def test_anti_diagonal_sums(schedule):
    """d[r.x + r.y] += inp[r.x, r.y]: for one row r.x, the columns r.y hit different
    points, so the inner loop runs out of order while the row loop stays serial."""
    for shape in SIZES:
        inp = halo.ImageParam(halo.int32, 2, "inp")
        r = halo.RDom(inp, name="r")
        d = halo.Func("d")
        d[x] = 0
        d[r.x + r.y] += inp[r.x, r.y]
        schedule(d, r)
        a = np.random.default_rng(6).integers(-50, 50, shape).astype(np.int32)
        expected = np.array([np.trace(np.fliplr(a), offset=shape[1] - 1 - k)
                             for k in range(shape[0] + shape[1] - 1)], np.int32)
        assert_matches_reference(d, (shape[0] + shape[1] - 1,), {inp: a}, expected)


@pytest.mark.parametrize("schedule", [
    lambda h, r: h.update(0).reorder(r.y, r.x),
    lambda h, r: h.update(0).tile(r.x, r.y, ro, x, ri, y, 4, 8),
], ids=["reorder", "tile"])
def test_reorder_of_an_order_free_update(schedule):
    """An integer histogram counts the same in any order, so its reduction loops may be
    reordered or tiled (still serial: running them at once needs atomic())."""
    rng = np.random.default_rng(8)
    for shape in [(1, 1), (13, 7), (37, 53)]:
        image, hist, r = histogram()
        schedule(hist, r)
        img = rng.integers(0, 256, shape).astype(np.uint8)
        expected = np.bincount(img.ravel(), minlength=256).astype(np.int32)
        assert_matches_reference(hist, (256,), {image: img}, expected)


def test_tiled_maximum_of_floats():
    """max is exact in any order, also for floats."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom(inp, name="r")
    m = halo.Func("m")
    m[()] = halo.cast(halo.float32, -np.inf)
    m[()] = halo.max(m[()], inp[r.x, r.y])
    m.update(0).tile(r.x, r.y, ro, x, ri, y, 3, 4)
    a = np.random.default_rng(9).random((11, 17), dtype=np.float32)
    assert_matches_reference(m, (), {inp: a}, np.float32(a.max()))


def test_a_one_dimensional_rdom_names_its_loop():
    """A 1-D RDom stands for its reduction variable wherever a loop is named, as it does
    in expressions (A[i, r])."""
    i, j = halo.vars("i j")
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(8, dtype=np.float32).reshape(4, 2)
    A, B = halo.Buffer(a, "A"), halo.Buffer(b, "B")
    r = halo.RDom((0, 4))
    C = halo.Func("C")
    C[i, j] = 0.0
    C[i, j] += A[i, r] * B[r, j]
    C.update().reorder(i, r, j)
    assert C.update()._stage().dim_names() == ["i", r.x.name, "j"]
    np.testing.assert_allclose(C.realize((3, 2)), a @ b)


def test_a_many_dimensional_rdom_names_no_loop():
    i = halo.Var("i")
    r = halo.RDom((0, 2), (0, 3))
    f = halo.Func("f")
    f[i] = 0
    f[i] += r.x + r.y
    with pytest.raises(halo.ScheduleError, match="RDom .* has 2 dimensions.*r.*x"):
        f.update().reorder(r, i)
