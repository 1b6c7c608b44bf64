"""unroll_loops: unrolled loops become copies of their body; vectorized loops must have a
constant extent."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from halo.ir import nodes as n
from halo.ir.nodes import ForKind

from .conftest import evaluate, lets_of, lower_until, nodes_of

y, x, xo, xi, yo, yi = halo.vars("y x xo xi yo yi")


def lowered(outputs) -> n.Stmt:
    # Without partition_loops, which would copy loops: these tests count them.
    return lower_until(outputs, "unroll_loops", skip=("partition_loops",))[0]


def unrolled_loops(stmt: n.Stmt) -> list[n.For]:
    return [lp for lp in nodes_of(stmt, n.For) if lp.kind is ForKind.UNROLLED]


def test_unroll_by_four_leaves_four_stores_and_no_unrolled_loop():
    """f.unroll(x, 4): no For of kind UNROLLED remains, and there are 4 Stores inside the
    outer x loop, for inner iterations 0, 1, 2, 3."""
    f = halo.Func("f")
    f[x] = x * 3
    f.unroll(x, 4)
    stmt = lowered(f)
    assert unrolled_loops(stmt) == []
    assert [lp.name for lp in nodes_of(stmt, n.For)] == ["f.s0.x.x"]
    stores = nodes_of(stmt, n.Store, "f")
    assert len(stores) == 4
    assert not any(v.name == "f.s0.x.x_unroll" for v in nodes_of(stmt, n.Var))
    # shift_inwards tail: x = min + min(x.x * 4, extent - 4) + i in the i-th copy
    lets = [s for s in nodes_of(stmt, n.LetStmt) if s.name == "f.s0.x"]
    values = {"f.min.0": 0, "f.extent.0": 10, "f.s0.x.x": 1}
    env = lets_of(stmt)
    assert [evaluate(s.value, values, env) for s in lets] == [4, 5, 6, 7]


def test_unroll_of_a_bounded_loop_substitutes_min_plus_i():
    """bound(x, 2, 3) + unroll(x): three stores, of x * 10 at x = 2, 3, 4."""
    f = halo.Func("f")
    f[x] = x * 10
    f.bound(x, 2, 3).unroll(x)
    stmt = lowered(f)
    assert nodes_of(stmt, n.For) == []
    stores = nodes_of(stmt, n.Store, "f")
    assert [evaluate(s.value, {}) for s in stores] == [20, 30, 40]
    assert [evaluate(s.index, {"f.min.0": 2, "f.stride.0": 1}) for s in stores] == [0, 1, 2]


def test_nested_unrolls_multiply():
    """A 2x3 tile with both inner loops unrolled gives 6 stores per tile."""
    f = halo.Func("f")
    f[y, x] = y + x
    f.tile(y, x, yo, xo, yi, xi, 2, 3).unroll(yi).unroll(xi)
    stmt = lowered(f)
    assert unrolled_loops(stmt) == []
    assert [lp.name for lp in nodes_of(stmt, n.For)] == ["f.s0.y.yo", "f.s0.x.xo"]
    assert len(nodes_of(stmt, n.Store, "f")) == 6


def test_unrolled_reduction_loop_keeps_the_order_of_the_domain():
    """Unrolling r.x of an update over RDom((0, 3)) gives the copies r = 0, 1, 2 in order."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    r = halo.RDom((0, 3), name="r")
    f = halo.Func("f")
    f[()] = 0
    f[()] += inp[r.x]
    f.update(0).unroll(r.x)
    stmt = lowered(f)
    loads = nodes_of(stmt, n.Load, "inp")
    assert [evaluate(ld.index, {"inp.stride.0": 1}) for ld in loads] == [0, 1, 2]


def test_vectorized_loop_with_a_constant_extent_is_left_for_the_backend():
    """vectorize(x, 8) keeps one VECTORIZED loop of extent 8."""
    f = halo.Func("f")
    f[x] = x * 2
    f.vectorize(x, 8)
    vector = [lp for lp in nodes_of(lowered(f), n.For) if lp.kind is ForKind.VECTORIZED]
    assert len(vector) == 1 and vector[0].extent == n.const(8)


def test_unroll_of_a_loop_with_a_symbolic_extent_is_an_error():
    """unroll(x) on an output's x (extent known only at run time) is refused with the loop
    named as the user wrote it."""
    f = halo.Func("f")
    f[x] = x
    f.unroll(x)
    with pytest.raises(halo.ScheduleError, match=r"f\.unroll\(x\): loop x of f has extent .* not a "
                       "constant"):
        lowered(f)


def test_vectorize_of_a_loop_with_a_symbolic_extent_is_an_error():
    """vectorize(x) without a split or bound is refused."""
    f = halo.Func("f")
    f[x] = x
    f.vectorize(x)
    with pytest.raises(halo.ScheduleError, match=r"f\.vectorize\(x\): loop x of f has extent"):
        lowered(f)


def test_unroll_of_more_than_256_iterations_is_an_error():
    """Unrolling a 300-iteration loop is refused and says to split it first."""
    f = halo.Func("f")
    f[x] = x
    f.split(x, xo, xi, 300).unroll(xi)
    with pytest.raises(halo.ScheduleError, match="300 iterations"):
        lowered(f)


def test_unroll_of_a_stencil_window_computed_at_the_consumer():
    """g.compute_at(f, x).unroll(x) for a 3-tap stencil: g's loop runs exactly 3 times
    (bounds inference gives it extent 3), so it unrolls into 3 stores."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = inp[x] * 2.0
    f[x] = g[x - 1] + g[x] + g[x + 1]
    g.compute_at(f, x).unroll(x)
    stmt = lowered(f)
    assert unrolled_loops(stmt) == []
    assert len(nodes_of(stmt, n.Store, "g")) == 3


def clamped_tile(unroll_rows: bool):
    """g computed per 4x8 tile of f (shift_inwards tiles: on an image smaller than a tile
    they are clamped, so g's loops have extents like min(t + 3, n - 1) - max(t, 0) + 1)."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x] * 2.0
    f[y, x] = g[y, x] + 1.0
    f.tile(y, x, yo, xo, yi, xi, 4, 8)
    g.compute_at(f, xo).vectorize(x)
    if unroll_rows:
        g.unroll(y)
    return inp, f


@pytest.mark.parametrize("unroll_rows", [False, True])
def test_a_clamped_tile_runs_its_bound_of_iterations_guarded(unroll_rows):
    """A loop of run-time extent with a constant upper bound (the tile) runs the bound's
    iterations, each guarded: unrolled into 4 row copies, vectorized 8 wide with a
    predicate, as Halide does."""
    _, f = clamped_tile(unroll_rows)
    stmt = lowered(f)
    loops = [lp for lp in nodes_of(stmt, n.For) if lp.name.startswith("g.s0")]
    assert all(isinstance(lp.extent, n.Const) for lp in loops if lp.kind is not ForKind.SERIAL)
    assert {lp.extent.value for lp in loops if lp.kind is ForKind.VECTORIZED} == {8}
    if unroll_rows:
        assert unrolled_loops(stmt) == [] and len(nodes_of(stmt, n.Store, "g")) >= 4


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (4, 8), (7, 13), (13, 29)])
@pytest.mark.parametrize("unroll_rows", [False, True])
def test_a_clamped_tile_matches_the_reference(shape, unroll_rows):
    inp, f = clamped_tile(unroll_rows)
    img = np.random.default_rng(shape[0]).random(shape, dtype=np.float32)
    np.testing.assert_allclose(f.realize(shape, inputs={inp: img}),
                               halo.reference(f, shape, inputs={inp: img}), rtol=1e-6)
