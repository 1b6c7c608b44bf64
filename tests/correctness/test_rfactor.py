"""rfactor: the intermediate plus merge, scheduled in parallel and vectorized, computes
what the unfactored algorithm computes (the reference of a second, unscheduled copy)."""
from __future__ import annotations

import numpy as np
import pytest

import halo

x, u, ro, ri, t = halo.vars("x u ro ri t")

# name -> (identity, update of f by e, NumPy reduction)
OPERATORS = {
    "sum": (0, lambda f, e: f + e, np.sum),
    "sum_e_first": (0, lambda f, e: e + f, np.sum),
    "difference": (0, lambda f, e: f - e, lambda a, axis=None: -np.sum(a, axis=axis)),
    "product": (1, lambda f, e: f * e, np.prod),
    "minimum": (None, lambda f, e: halo.min(f, e), np.min),
    "maximum": (None, lambda f, e: halo.max(e, f), np.max),
    "select_min": (None, lambda f, e: halo.select(e < f, e, f), np.min),
    "select_max": (None, lambda f, e: halo.select(f < e, e, f), np.max),
}


def _identity(kind: str, dtype):
    init = OPERATORS[kind][0]
    if init is not None:
        return init
    t = halo.float32 if dtype == np.float32 else halo.int32
    return t.max_value() if "min" in kind else t.min_value()


def total(kind: str, dtype, where: bool = False):
    """f[()] = op over every element of a 2-D input (optionally where r.x + r.y is not
    a multiple of 3)."""
    t = halo.float32 if dtype == np.float32 else halo.int32
    inp = halo.ImageParam(t, 2, "inp")
    r = halo.RDom(inp, name="r")
    if where:
        r.where((r.x + r.y) % 3 != 0)
    f = halo.Func("f")
    f[()] = halo.cast(t, _identity(kind, dtype))
    f[()] = OPERATORS[kind][1](f[()], inp[r.x, r.y])
    return inp, f, r


def column_totals(kind: str, dtype):
    """f[x] = op over the rows of column x (a 1-D RDom and a pure Var)."""
    t = halo.float32 if dtype == np.float32 else halo.int32
    inp = halo.ImageParam(t, 2, "inp")
    r = halo.RDom((0, inp.shape[0]), name="r")
    f = halo.Func("f")
    f[x] = halo.cast(t, _identity(kind, dtype))
    f[x] = OPERATORS[kind][1](f[x], inp[r, x])
    return inp, f, r


def _data(shape, dtype, kind, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.float32:
        low = 0.9 if kind == "product" else -1
        return rng.uniform(low, 1.1, shape).astype(np.float32)
    if kind == "product":
        return rng.choice(np.array([-1, 1, 1, 2], np.int32), shape)
    return rng.integers(-1000, 1000, shape).astype(np.int32)


def _check(build, schedule, in_shape, out_shape, dtype, kind, **kw):
    inp, f, r = build(kind, dtype, **kw)
    schedule(f, r)
    twin_inp, twin, _ = build(kind, dtype, **kw)
    a = _data(in_shape, dtype, kind)
    got = f.realize(out_shape, inputs={inp: a})
    want = halo.reference(twin, out_shape, inputs={twin_inp: a})
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype == np.float32:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    else:
        np.testing.assert_array_equal(got, want)
    return a, got


def _outer_parallel(f, r):
    intm = f.update(0).rfactor(r.x, u)
    intm.compute_root().update(0).parallel(u)


def _inner_vectorized(f, r):
    intm = f.update(0).rfactor(r.y, u)
    intm.compute_root().vectorize(u, 4).update(0).reorder(r.x, u).vectorize(u, 4)


def _split_outer_parallel(f, r):
    f.update(0).split(r.x, ro, ri, 3)
    intm = f.update(0).rfactor(ro, u)
    intm.compute_root().update(0).parallel(u)


def _split_inner_vectorized(f, r):
    f.update(0).split(r.y, ro, ri, 4)
    intm = f.update(0).rfactor(ri, u)
    intm.compute_root().update(0).reorder(r.x, ro, u).vectorize(u)


def _fused_then_split(f, r):
    f.update(0).fuse(r.x, r.y, t).split(t, ro, ri, 5)
    intm = f.update(0).rfactor(ro, u)
    intm.compute_root().update(0).parallel(u)


TOTAL_SCHEDULES = [_outer_parallel, _inner_vectorized, _split_outer_parallel,
                   _split_inner_vectorized, _fused_then_split]
SHAPES = [(1, 1), (7, 13), (17, 5), (2, 31)]


@pytest.mark.parametrize("schedule", TOTAL_SCHEDULES, ids=lambda s: s.__name__.strip("_"))
@pytest.mark.parametrize("kind", list(OPERATORS))
@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=["f32", "i32"])
def test_total(schedule, kind, dtype):
    """A 2-D RDom reduced to one value, for each operator form and each schedule."""
    for shape in SHAPES:
        _check(total, schedule, shape, (), dtype, kind)


@pytest.mark.parametrize("schedule", TOTAL_SCHEDULES, ids=lambda s: s.__name__.strip("_"))
@pytest.mark.parametrize("kind", ["sum", "maximum", "product"])
def test_total_where(schedule, kind):
    """RDom.where predicates move into the intermediate, with the preserved variable
    replaced by its pure Var."""
    for shape in SHAPES:
        a, got = _check(total, schedule, shape, (), np.int32, kind, where=True)
        keep = (np.add.outer(np.arange(shape[0]), np.arange(shape[1])) % 3) != 0
        if keep.any():
            assert got == OPERATORS[kind][2](a[keep])


@pytest.mark.parametrize("kind", ["sum", "minimum", "product"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=["f32", "i32"])
def test_split_one_dimensional(kind, dtype):
    """A 1-D RDom with a pure Var: rfactor needs a split; each half may be preserved,
    with a non-dividing factor, and the merge scheduled too."""
    def outer(f, r):
        f.update(0).split(r.x, ro, ri, 4)
        f.update(0).rfactor(ro, u).compute_root().update(0).parallel(u)
        f.update(0).vectorize(x, 4)

    def inner(f, r):
        f.update(0).split(r.x, ro, ri, 4)
        intm = f.update(0).rfactor(ri, u)
        intm.compute_at(f.update(0), x).update(0).reorder(ro, u).vectorize(u)

    for schedule in (outer, inner):
        for shape in [(1, 1), (11, 3), (29, 9)]:
            a, got = _check(column_totals, schedule, shape, (shape[1],), dtype, kind)
            expected = OPERATORS[kind][2](a, axis=0)
            if dtype == np.int32:
                np.testing.assert_array_equal(got, expected.astype(np.int32))


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise(op):
    """Bitwise reductions of integers are associative and commutative too; exact."""
    combine = {"and": lambda f, e: f & e, "or": lambda f, e: e | f,
               "xor": lambda f, e: f ^ e}[op]
    numpy_op = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]

    def build():
        inp = halo.ImageParam(halo.uint16, 2, "inp")
        r = halo.RDom(inp, name="r")
        f = halo.Func("f")
        f[()] = halo.cast(halo.uint16, 0xFFFF if op == "and" else 0)
        f[()] = combine(f[()], inp[r.x, r.y])
        return inp, f, r

    rng = np.random.default_rng(4)
    for shape in SHAPES:
        inp, f, r = build()
        f.update(0).rfactor(r.x, u).compute_root().update(0).parallel(u)
        twin_inp, twin, _ = build()
        a = rng.integers(0, 1 << 16, shape).astype(np.uint16)
        a |= np.uint16(0x0100) if op == "and" else np.uint16(0)
        got = f.realize((), inputs={inp: a})
        assert got == halo.reference(twin, (), inputs={twin_inp: a})
        assert got == numpy_op.reduce(a, axis=None)


def test_split_k_matmul():
    """C = A @ B with the k loop split and its outer half preserved: partial products
    over blocks of k in parallel (a 2-D Func plus the new dimension), then their sum."""
    import apps.matmul

    i, j, ko, ki = halo.vars("i j ko ki")
    rng = np.random.default_rng(9)
    for m, kk, nn in [(1, 1, 1), (5, 13, 7), (9, 4, 17)]:
        A, B, C, funcs = apps.matmul.algorithm()
        C.update(0).split(funcs["k"].x, ko, ki, 3)
        intm = C.update(0).rfactor(ko, u)
        intm.compute_root().update(0).parallel(u).reorder(u, i, ki, j).vectorize(j, 4)
        C.update(0).vectorize(j, 4)
        a = rng.random((m, kk), dtype=np.float32)
        b = rng.random((kk, nn), dtype=np.float32)
        tA, tB, twin, _ = apps.matmul.algorithm()
        got = C.realize((m, nn), inputs={A: a, B: b})
        np.testing.assert_allclose(got, halo.reference(twin, (m, nn), inputs={tA: a, tB: b}),
                                   rtol=1e-5)
        np.testing.assert_allclose(got, a @ b, rtol=1e-5)


def test_fused_empty_reduction_stays_empty():
    """Two reduction loops of negative extent (an empty domain) fuse into a loop of no
    iterations in rfactor's intermediate too, though the product of the extents is
    positive."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    n = halo.Param(halo.int32, "n")
    r = halo.RDom((0, n), (0, n), name="r")
    f = halo.Func("f")
    f[()] = 0
    f[()] = f[()] + (inp[halo.clamp(r.x + r.y, 0, 9)] + 1)
    f.update(0).fuse(r.x, r.y, t).split(t, ro, ri, 5)
    f.update(0).rfactor(ro, u).compute_root()
    data = np.arange(10, dtype=np.int32)
    assert int(f.realize((), inputs={inp: data, n: -3})) == 0
    assert int(f.realize((), inputs={inp: data, n: 3})) == 27


@pytest.mark.parametrize("where", [False, True], ids=["square", "triangle"])
@pytest.mark.parametrize("factored", ["x", "y", "split x"])
def test_update_indexed_by_its_reduction_variables(where, factored):
    """`g[r.x, r.y] += ...` writes a point per value of the factored variable: its slice
    of the intermediate writes there too (`intm[u, u, r.y]`), once per point, and the
    merge adds identity elsewhere."""
    y, x_, u_ = halo.vars("y x_ u_")

    def build():
        g = halo.Func("g")
        g[y, x_] = 0
        r = halo.RDom((0, 4), (0, 4))
        if where:
            r.where(r.y < r.x)
        g[r.x, r.y] += r.x * 10 + r.y + 1
        return g, r

    want = halo.reference(build()[0], (4, 5))
    g, r = build()
    stage = g.update(0)
    if factored == "split x":
        stage.split(r.x, ro, ri, 3).rfactor(ro, u_).compute_root().update(0).parallel(u_)
    else:
        stage.rfactor(getattr(r, factored), u_)
    np.testing.assert_array_equal(g.realize((4, 5)), want)
    np.testing.assert_array_equal(halo.reference(g, (4, 5)), want)


def test_select_minimum_skips_nan_in_any_grouping():
    """`select(e < f, e, f)` never picks a NaN e (unlike min): the intermediate and the
    merge keep that form. The form that picks f where the comparison holds forgets a NaN
    f at the next e, so on floats it depends on the order and is refused."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    data = np.array([3, np.nan, -1, 2, np.nan, 5, -4, 0], np.float32)

    def build(pick_e: bool):
        f = halo.Func("f")
        r = halo.RDom((0, 8), name="r")
        f[x] = halo.cast(halo.float32, np.inf)
        e = inp[r.x]
        f[x] = halo.select(e < f[x], e, f[x]) if pick_e else halo.select(f[x] < e, f[x], e)
        return f, r

    f, r = build(True)
    f.update(0).split(r.x, ro, ri, 3).rfactor(ro, u)
    np.testing.assert_array_equal(f.realize((1,), inputs={inp: data}), [-4.0])
    g, r = build(False)
    with pytest.raises(halo.ScheduleError, match="select"):
        g.update(0).split(r.x, ro, ri, 3).rfactor(ro, u)
