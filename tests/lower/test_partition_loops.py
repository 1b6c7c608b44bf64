"""partition_loops: guards that hold over a whole loop are hoisted around a guard-free copy;
a guard linear in a serial loop's variable splits that loop into prologue, steady state and
epilogue. Each test checks the shape of the IR and evaluates the bounds it computes."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from apps import matmul
from halo.ir import nodes as n
from halo.ir.nodes import ForKind
from halo.ir.visitor import walk
from halo.lang.environment import Environment
from halo.lower.partition_loops import partition_loops
from halo.lower.pipeline import lower

from .conftest import context_of, evaluate, lower_until, nodes_of

y, x, xo, xi, yo, yi = halo.vars("y x xo xi yo yi")


def partitioned(f: halo.Func) -> n.Stmt:
    return lower_until(f, "partition_loops")[0]


def _loads_unclamped(stmt: n.Stmt) -> bool:
    """Whether no load in `stmt` has a min or max in its index."""
    return not [m for ld in nodes_of(stmt, n.Load)
                for m in nodes_of(ld.index, n.Min) + nodes_of(ld.index, n.Max)]


def guards_inside(stmt: n.Stmt, kind: ForKind) -> list[n.IfThenElse]:
    """The IfThenElse nodes inside loops of `kind` in `stmt`."""
    return [g for lp in nodes_of(stmt, n.For) if lp.kind is kind
            for g in nodes_of(lp.body, n.IfThenElse)]


def test_shift_inwards_guard_is_hoisted_out_of_every_loop():
    """A shift_inwards split keeps `lo <= x` for outputs narrower than the vector; it
    holds for every lane and every outer iteration once the extent is >= 8, so the pass
    puts one branch at the top: its then-branch has no guard inside any loop."""
    f = halo.Func("f")
    f[y, x] = y + x
    f.vectorize(x, 8)
    stmt = partitioned(f)
    top = nodes_of(stmt, n.IfThenElse)[0]
    assert isinstance(top.then_case, n.For) and top.then_case.name == "f.s0.y"
    # The steady state (full vectors, not the last, shifted one) stores unguarded.
    assert any(not guards_inside(lp, ForKind.VECTORIZED)
               for lp in nodes_of(top.then_case, n.For) if lp.kind is ForKind.SERIAL
               and lp.name == "f.s0.x.x")
    # The else branch is the original nest, guard included.
    assert len(nodes_of(top.else_case, n.IfThenElse)) == 1
    extent = {"f.min.0": 0, "f.min.1": 0, "f.extent.0": 3}
    env = {"f.s0.y.max": n.Var("f.extent.0"), "f.s0.x.max": n.Sub(n.Var("f.extent.1"),
                                                                  n.const(1))}
    for width, fast in [(8, True), (20, True), (7, False), (1, False)]:
        assert evaluate(top.condition, {**extent, "f.extent.1": width}, env) == fast


def test_guarded_tail_splits_the_serial_loop_into_steady_state_and_epilogue():
    """An update's guard `x < max + 1` depends on the outer loop linearly: the loop over
    vectors becomes a guard-free steady-state loop over the full vectors and a guarded
    epilogue for the rest (its prologue, of no iterations, is left out)."""
    f = halo.Func("f")
    f[x] = 0
    f[x] += x
    f.update(0).vectorize(x, 8)
    stmt = partitioned(f)
    loops = [lp for lp in nodes_of(stmt, n.For) if lp.name == "f.s1.x.x"]
    assert len(loops) == 2
    steady, tail = loops
    assert guards_inside(steady, ForKind.VECTORIZED) == []
    assert len(nodes_of(tail, n.IfThenElse)) == 1
    env = {"f.s1.x.max": n.Sub(n.Add(n.Var("f.extent.0"), n.Var("f.min.0")), n.const(1))}
    for width in (1, 7, 8, 9, 16, 23):
        values = {"f.min.0": 0, "f.extent.0": width}
        start = evaluate(steady.min, values, env)
        end = start + evaluate(steady.extent, values, env)
        tail_end = evaluate(tail.min, values, env) + evaluate(tail.extent, values, env)
        assert (start, end, evaluate(tail.min, values, env), tail_end) == \
            (0, width // 8, width // 8, (width + 7) // 8)


def test_nested_splits_share_one_copy_before_and_after_the_steady_state():
    """Two guards of one serial loop, each linear in it with its own range (a
    double-buffered GPU matmul's copy of the next k step, and the k step's tail): the
    steady state is where both hold, and the original body runs in one loop after it,
    not in one loop per guard (each a copy of the whole body); a loop of no iterations
    (the prologue here) is left out. Every iteration still runs exactly what it did."""
    ko, m, e, size = (n.Var(v) for v in ("ko", "m", "e", "n"))
    body = n.Block((
        n.IfThenElse(n.LT(n.Add(ko, n.const(1)), m), n.Store("a", ko, n.const(1.0))),
        n.IfThenElse(n.LT(n.Add(n.Mul(ko, n.const(8)), n.const(7)), e),
                     n.Store("b", ko, n.const(2.0)))))
    loop = n.For("ko", n.const(0), size, ForKind.SERIAL, body)
    stmt = partition_loops(loop, None)
    loops = nodes_of(stmt, n.For, "ko")
    assert len(loops) == 2
    steady, rest = loops
    assert not nodes_of(steady, n.IfThenElse) and rest.body is body
    for values in ({"n": 10, "m": 10, "e": 80}, {"n": 10, "m": 4, "e": 80},
                   {"n": 10, "m": 10, "e": 30}, {"n": 3, "m": 1, "e": 0}):
        spans = [(evaluate(lp.min, values), evaluate(lp.min, values) + evaluate(lp.extent, values))
                 for lp in loops]
        ran = [i for lo, hi in spans for i in range(lo, hi)]
        assert ran == list(range(values["n"]))
        for i in range(*spans[0]):  # the steady state: both guards hold there
            assert i + 1 < values["m"] and i * 8 + 7 < values["e"]


def test_guard_on_loaded_data_is_not_hoisted():
    """A condition that reads memory (RDom.where on input data) stays where it is."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    r = halo.RDom((0, 10), name="r")
    r.where(inp[r.x] > 0)
    f = halo.Func("f")
    f[()] = 0
    f[()] += inp[r.x]
    stmt = partitioned(f)
    loop = nodes_of(stmt, n.For)[0]
    assert isinstance(loop.body, n.IfThenElse) or nodes_of(loop.body, n.IfThenElse)
    assert len(nodes_of(stmt, n.For)) == 1


def test_nothing_to_hoist_leaves_the_ir_unchanged():
    """A loop nest without guards is returned as the same node."""
    f = halo.Func("f")
    f[y, x] = y * x
    stmt = lower_until(f, "storage_flattening")[0]
    assert partition_loops(stmt, context_of(f)) is stmt


@pytest.mark.parametrize("width", [1, 3, 7, 8, 9, 31])
def test_partitioned_update_matches_the_reference(width):
    """The steady-state copy and the epilogue together write every point once."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f = halo.Func("f")
    f[x] = inp[x]
    f[x] += inp[x] * 2.0
    f.vectorize(x, 8)
    f.update(0).vectorize(x, 8)
    data = np.arange(width, dtype=np.float32)
    np.testing.assert_allclose(f.realize((width,), inputs={inp: data}), data * 3)


def test_clamps_of_a_boundary_condition_leave_the_steady_state():
    """repeat_edge clamps `x - 1` and `x + 1` into the input; the loop over vectors is
    split so that its middle part reads the input at plain `x - 1` and `x + 1` (dense
    loads once vectorized), with no min or max left in any index."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    clamped = halo.boundary.repeat_edge(inp)
    f = halo.Func("f")
    f[x] = clamped[x - 1] + clamped[x + 1]
    f.vectorize(x, 8)
    stmt = partitioned(f)

    def clamp_free(lp: n.For) -> bool:
        return _loads_unclamped(lp) and not nodes_of(lp, n.IfThenElse)
    loops = [lp for lp in nodes_of(stmt, n.For) if lp.name == "f.s0.x.x"]
    assert any(clamp_free(lp) for lp in loops)
    assert not all(clamp_free(lp) for lp in loops)  # the edges keep their clamps


def _blur_x_in_tiles():
    """A clamped 1x3 blur computed per 8 x 32 tile of its consumer: its loops inside the
    tile have constant extents (10 rows, 4 vectors of 8)."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    clamped = halo.boundary.repeat_edge(inp)
    blur_x, out = halo.Func("blur_x"), halo.Func("out")
    blur_x[y, x] = clamped[y, x - 1] + clamped[y, x] + clamped[y, x + 1]
    out[y, x] = blur_x[y - 1, x] + blur_x[y, x] + blur_x[y + 1, x]
    out.tile(y, x, yo, xo, yi, xi, 8, 32).vectorize(xi, 8)
    blur_x.compute_at(out, xo).vectorize(x, 8)
    return inp, out


def test_clamps_in_a_tile_of_constant_extent_leave_the_steady_state():
    """A producer's loops inside its consumer's tile run a constant number of times; a
    serial one of them is split around its clamps as a loop of run-time extent is (the
    vectors of most tiles read the input unclamped)."""
    _, out = _blur_x_in_tiles()
    before = lower_until(out, "storage_flattening")[0]
    assert n.const(10) in [lp.extent for lp in nodes_of(before, n.For)
                           if lp.name == "blur_x.s0.y"]
    after = partitioned(out)
    rows = [lp for lp in nodes_of(after, n.For) if lp.name == "blur_x.s0.y"
            and isinstance(lp.body, n.For)]
    assert len(rows) > 2
    vectors = [lp for lp in nodes_of(after, n.For) if lp.name == "blur_x.s0.x.x"]
    assert any(_loads_unclamped(lp) for lp in vectors)


@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (9, 40), (17, 67)])
def test_clamps_in_a_tile_match_the_reference(shape):
    inp, out = _blur_x_in_tiles()
    data = np.random.default_rng(shape[1]).random(shape, dtype=np.float32)
    np.testing.assert_allclose(out.realize(shape, inputs={inp: data}),
                               halo.reference(out, shape, inputs={inp: data}), rtol=1e-6)


@pytest.mark.parametrize("width", [1, 2, 3, 8, 9, 17, 33])
def test_partitioned_clamps_match_the_reference(width):
    """Prologue, steady state and epilogue of a clamped stencil cover every width."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    clamped = halo.boundary.repeat_edge(inp)
    f = halo.Func("f")
    f[x] = clamped[x - 1] + clamped[x] * 2.0 + clamped[x + 1]
    f.vectorize(x, 8)
    data = np.random.default_rng(width).random(width, dtype=np.float32)
    padded = np.pad(data, 1, mode="edge")
    np.testing.assert_allclose(f.realize((width,), inputs={inp: data}),
                               halo.reference(f, (width,), inputs={inp: data}))
    np.testing.assert_allclose(f.realize((width,), inputs={inp: data}),
                               padded[:-2] + padded[1:-1] * 2 + padded[2:], rtol=1e-6)


def _tiled_convolution(parallel: bool) -> tuple[halo.Func, halo.ImageParam, halo.ImageParam]:
    """A 5x5 convolution update tiled 16x64 and vectorized: its reduction loops sit
    inside the vectorized loop, and its tail guards inside them."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    weights = halo.ImageParam(halo.float32, 2, "weights")
    clamped = halo.boundary.repeat_edge(inp)
    r = halo.RDom((0, 5), (0, 5), name="r")
    f = halo.Func("f")
    f[y, x] = 0.0
    f[y, x] += clamped[y + r.x - 2, x + r.y - 2] * weights[r.x, r.y]
    f.update(0).tile(y, x, yo, xo, yi, xi, 16, 64).vectorize(xi, 8)
    if parallel:
        f.update(0).parallel(yo)
    return f, inp, weights


def test_guards_under_the_reduction_loops_of_a_vector_loop_leave_vector_code():
    """The update's guards `x < max + 1` and `y < max + 1` sit under the reduction loops
    inside the vectorized loop; they hold over the vector and those loops for whole tiles,
    so the steady state's vector code has no guard (it was masked everywhere, for every
    size, before)."""
    f, _, _ = _tiled_convolution(parallel=False)
    stmt = partitioned(f)
    vectors = [lp for lp in nodes_of(stmt, n.For) if lp.kind is ForKind.VECTORIZED]
    assert any(not nodes_of(lp, n.IfThenElse) for lp in vectors)


def test_a_partial_tile_of_a_parallel_loop_leaves_the_other_tiles_fast():
    """Where the rows aren't a multiple of 16 (1535), the last tile of rows is short. The
    parallel loop over tiles can't be split around a steady state, so the choice stays in
    each iteration: every copy of the parallel loop holds a guard-free loop over column
    tiles (the one short tile sent the whole stage to the guarded copy before)."""
    f, _, _ = _tiled_convolution(parallel=True)
    stmt = partitioned(f)
    parallel = [lp for lp in nodes_of(stmt, n.For) if lp.kind is ForKind.PARALLEL]
    assert parallel
    for lp in parallel:
        assert any(not guards_inside(inner, ForKind.VECTORIZED)
                   for inner in nodes_of(lp.body, n.For, "f.s1.x.xo"))


@pytest.mark.parametrize("shape", [(3, 5), (16, 64), (17, 70), (33, 129)])
@pytest.mark.parametrize("parallel", [False, True])
def test_tiled_convolution_update_matches_the_reference(shape, parallel):
    """Whole and partial tiles, in rows and columns, together write every point once."""
    f, inp, weights = _tiled_convolution(parallel)
    rng = np.random.default_rng(sum(shape))
    inputs = {inp: rng.random(shape, dtype=np.float32),
              weights: rng.random((5, 5), dtype=np.float32)}
    np.testing.assert_allclose(f.realize(shape, inputs=inputs),
                               halo.reference(f, shape, inputs=inputs), rtol=1e-5)


@pytest.mark.parametrize("k_step", [None, 64])
def test_a_gpu_blocks_k_loop_has_a_steady_state_of_whole_panels(k_step):
    """The panels of a tensor-core matmul are computed per step of k, their region
    clamped to k's end (`min(ko * 64 + 191, k - 1)`): the k loop is split so that its
    steady state has no such clamp, and the copies constant extents (padded k too, whose
    copies' unrolled loops must keep constant extents)."""
    *_, C, funcs = matmul.algorithm_fp16(k_step=k_step)
    matmul.gpu_schedule_tensor_core(funcs)
    stmt = lower(Environment.of([C]), halo.Target("cuda", arch="sm_90")).stmt
    steps = [x for x in walk(stmt) if isinstance(x, n.For) and x.name.endswith(".ko")]

    def clamped(loop):  # a panel's region clamped to k's end: `max.ahead = min(..)`
        return any(isinstance(let, n.LetStmt) and let.name.endswith(".max.ahead")
                   and isinstance(let.value, n.Min) for let in walk(loop.body))
    assert len(steps) > 1
    assert any(not clamped(loop) for loop in steps)
    assert any(clamped(loop) for loop in steps)  # the last steps keep the general code
