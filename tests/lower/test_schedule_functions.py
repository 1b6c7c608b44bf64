"""schedule_functions: loop nests from schedule records, and produce/storage placement.

Each test builds a small algorithm and schedule, runs the passes up to schedule_functions,
and compares the loop nest with the expected one (before simplification, so the text is
exactly what the pass builds), or checks where the pass put things.
"""
from __future__ import annotations

import pytest

import halo
from halo.ir import nodes as n
from halo.ir.nodes import ForKind
from halo.ir.printer import stmt_to_str
from halo.ir.visitor import walk

from .conftest import (
    enclosing_loops,
    loop,
    loop_names,
    lower_until,
    nodes_of,
    produce_of,
    storage_of,
)

y, x, yo, xo, yi, xi, t, xio, xii = halo.vars("y x yo xo yi xi t xio xii")


def lowered(outputs) -> n.Stmt:
    return lower_until(outputs, "schedule_functions")[0]


def pointwise():
    """f[y, x] = inp[y, x] + 1.0 over a 2-D float input."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f = halo.Func("f")
    f[y, x] = inp[y, x] + 1.0
    return f


def two_stage():
    """g is a pointwise Func of the input; f reads g at three rows."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x] * 2.0
    f[y, x] = g[y, x] + g[y + 1, x] + g[y + 2, x]
    return g, f


def test_pure_stage_is_one_loop_per_var_outermost_first():
    """A pure 2-D Func becomes y outside x, with bounds named for bounds inference."""
    expected = (
        "for f.s0.y in range(f.s0.y.min, f.s0.y.max + 1):\n"
        "  for f.s0.x in range(f.s0.x.min, f.s0.x.max + 1):\n"
        "    f[f.s0.y, f.s0.x] = inp[f.s0.y, f.s0.x] + 1.0\n")
    assert stmt_to_str(loop(lowered(pointwise()), "f.s0.y")) == expected


def test_split_with_guard_tail_recovers_x_by_a_let_and_guards_the_tail():
    """tail="guard" rounds the outer loop up and skips the points past the end; the let
    promises bounds inference that x stays in its range where it is used, the guard lets
    the body run (a guarded promise: a Func computed inside covers a clamped point)."""
    f = pointwise()
    f.split(x, xo, xi, 4, tail="guard")
    expected = (
        "for f.s0.x.xo in range((f.s0.x.max - f.s0.x.min + 1 + 3) // 4):\n"
        "  for f.s0.x.xi in range(4):\n"
        "    f.s0.x = promise_clamped(f.s0.x.min + f.s0.x.xo * 4 + f.s0.x.xi, f.s0.x.min,"
        " f.s0.x.min + (f.s0.x.max - f.s0.x.min + 1) - 1, True)\n"
        "    if f.s0.x < f.s0.x.min + (f.s0.x.max - f.s0.x.min + 1):\n"
        "      f[f.s0.y, f.s0.x] = inp[f.s0.y, f.s0.x] + 1.0\n")
    assert stmt_to_str(loop(lowered(f), "f.s0.x.xo")) == expected


def test_split_with_round_up_tail_has_no_guard():
    """tail="round_up" computes past the end: the same let, and no guard."""
    f = pointwise()
    f.split(x, xo, xi, 4, tail="round_up")
    expected = (
        "for f.s0.x.xo in range((f.s0.x.max - f.s0.x.min + 1 + 3) // 4):\n"
        "  for f.s0.x.xi in range(4):\n"
        "    f.s0.x = f.s0.x.min + f.s0.x.xo * 4 + f.s0.x.xi\n"
        "    f[f.s0.y, f.s0.x] = inp[f.s0.y, f.s0.x] + 1.0\n")
    assert stmt_to_str(loop(lowered(f), "f.s0.x.xo")) == expected


def test_split_with_shift_inwards_tail_moves_the_last_iteration_back():
    """tail="shift_inwards" clamps the start of the last iteration to extent - factor, and
    guards the low end for extents smaller than the factor."""
    f = pointwise()
    f.split(x, xo, xi, 4, tail="shift_inwards")
    expected = (
        "for f.s0.x.xo in range((f.s0.x.max - f.s0.x.min + 1 + 3) // 4):\n"
        "  for f.s0.x.xi in range(4):\n"
        "    f.s0.x = promise_clamped(f.s0.x.min + min(f.s0.x.xo * 4,"
        " f.s0.x.max - f.s0.x.min + 1 - 4) + f.s0.x.xi, f.s0.x.min,"
        " f.s0.x.min + (f.s0.x.max - f.s0.x.min + 1) - 1)\n"
        "    if f.s0.x.min <= f.s0.x:\n"
        "      f[f.s0.y, f.s0.x] = inp[f.s0.y, f.s0.x] + 1.0\n")
    assert stmt_to_str(loop(lowered(f), "f.s0.x.xo")) == expected


def test_auto_tail_is_shift_inwards_for_a_pure_stage():
    """tail="auto" on a pure stage lowers exactly as tail="shift_inwards"."""
    auto, shift = pointwise(), pointwise()
    auto.split(x, xo, xi, 4)
    shift.split(x, xo, xi, 4, tail="shift_inwards")
    assert lowered(auto) == lowered(shift)


def test_auto_tail_is_guard_for_an_update_stage():
    """tail="auto" on an update stage lowers exactly as tail="guard"."""
    stmts = []
    for tail in ("auto", "guard"):
        inp = halo.ImageParam(halo.float32, 1, "inp")
        f = halo.Func("f")
        f[x] = 0.0
        f[x] += inp[x]
        f.update(0).split(x, xo, xi, 4, tail=tail)
        stmts.append(lowered(f))
    assert stmts[0] == stmts[1]
    guards = nodes_of(stmts[0], n.IfThenElse)
    assert len(guards) == 1 and isinstance(guards[0].condition, n.LT)


def test_split_of_a_constant_extent_the_factor_divides_adds_no_guard():
    """Splitting the 8-wide inner loop by 4 needs no guard; only the outer split has one."""
    f = pointwise()
    f.split(x, xo, xi, 8, tail="guard").split(xi, xio, xii, 4, tail="guard")
    expected = (
        "for f.s0.x.xo in range((f.s0.x.max - f.s0.x.min + 1 + 7) // 8):\n"
        "  for f.s0.x.xi.xio in range((8 + 3) // 4):\n"
        "    for f.s0.x.xi.xii in range(4):\n"
        "      f.s0.x.xi = promise_clamped(0 + f.s0.x.xi.xio * 4 + f.s0.x.xi.xii, 0, 0 + 8 - 1)\n"
        "      f.s0.x = promise_clamped(f.s0.x.min + f.s0.x.xo * 8 + f.s0.x.xi, f.s0.x.min,"
        " f.s0.x.min + (f.s0.x.max - f.s0.x.min + 1) - 1, True)\n"
        "      if f.s0.x < f.s0.x.min + (f.s0.x.max - f.s0.x.min + 1):\n"
        "        f[f.s0.y, f.s0.x] = inp[f.s0.y, f.s0.x] + 1.0\n")
    assert stmt_to_str(loop(lowered(f), "f.s0.x.xo")) == expected


def test_shift_inwards_on_a_constant_extent_of_at_least_the_factor_adds_no_guard():
    """Splitting an 8-wide loop by 3 with shift_inwards overlaps the last iteration
    (starts 0, 3, 5) and needs no guard."""
    f = pointwise()
    f.split(x, xo, xi, 8, tail="round_up").split(xi, xio, xii, 3, tail="shift_inwards")
    stmt = lowered(f)
    assert nodes_of(stmt, n.IfThenElse) == []
    lets = {s.name: s.value for s in nodes_of(stmt, n.LetStmt)}
    assert lets["f.s0.x.xi"] == n.promise_clamped(n.Add(
        n.Add(n.const(0), n.Min(n.Mul(n.Var("f.s0.x.xi.xio"), n.const(3)),
                                n.Sub(n.const(8), n.const(3)))),
        n.Var("f.s0.x.xi.xii")), n.const(0), n.Sub(n.Add(n.const(0), n.const(8)), n.const(1)))


def test_fuse_makes_one_loop_and_recovers_both_vars_with_promised_ranges():
    """fuse(y, x, t) iterates y.extent * x.extent times (no times when either is empty,
    even when both are negative); y and x come back by // and %, with their ranges
    promised to bounds inference (a symbolic division hides them)."""
    f = pointwise()
    f.fuse(y, x, t)
    expected = (
        "for f.s0.t in range(max(f.s0.y.max - f.s0.y.min + 1, 0)"
        " * max(f.s0.x.max - f.s0.x.min + 1, 0)):\n"
        "  f.s0.y = promise_clamped(f.s0.y.min + f.s0.t // (f.s0.x.max - f.s0.x.min + 1),"
        " f.s0.y.min, f.s0.y.min + (f.s0.y.max - f.s0.y.min + 1) - 1)\n"
        "  f.s0.x = promise_clamped(f.s0.x.min + f.s0.t % (f.s0.x.max - f.s0.x.min + 1),"
        " f.s0.x.min, f.s0.x.min + (f.s0.x.max - f.s0.x.min + 1) - 1)\n"
        "  f[f.s0.y, f.s0.x] = inp[f.s0.y, f.s0.x] + 1.0\n")
    assert stmt_to_str(loop(lowered(f), "f.s0.t")) == expected


def test_reorder_puts_x_outside_y():
    """reorder(x, y) makes x the outer loop."""
    f = pointwise()
    f.reorder(x, y)
    assert loop_names(lowered(f)) == ["f.s0.x", "f.s0.y"]


def test_tile_then_fuse_orders_the_loops_as_written():
    """tile + fuse(yo, xo) gives the fused tile loop outside yi and xi."""
    f = pointwise()
    f.tile(y, x, yo, xo, yi, xi, 2, 4).fuse(yo, xo, t)
    assert loop_names(lowered(f)) == ["f.s0.t", "f.s0.y.yi", "f.s0.x.xi"]


def test_split_may_reuse_the_name_of_the_loop_it_splits():
    """split(x, x, xi, 4) names the outer loop f.s0.x.x, a different IR variable from x."""
    f = pointwise()
    f.split(x, x, xi, 4)
    assert loop_names(lowered(f)) == ["f.s0.y", "f.s0.x.x", "f.s0.x.xi"]


def test_loop_kinds_come_from_the_schedule():
    """parallel, vectorize and unroll set the kinds of their loops; others stay serial."""
    f = pointwise()
    f.split(x, xo, xi, 8).parallel(y).vectorize(xi).unroll(xo, 2)
    kinds = {lp.name: lp.kind for lp in nodes_of(lowered(f), n.For)}
    assert kinds == {"f.s0.y": ForKind.PARALLEL, "f.s0.x.xo.xo": ForKind.SERIAL,
                     "f.s0.x.xo.xo_unroll": ForKind.UNROLLED,
                     "f.s0.x.xi": ForKind.VECTORIZED}


def test_update_stage_puts_rvar_loops_inside_pure_loops():
    """An update over an RDom runs its pure loops outside the reduction loop, after the
    pure stage."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 3), name="r")
    f = halo.Func("f")
    f[y, x] = 0.0
    f[y, x] += inp[y, x + r.x]
    expected = (
        "for f.s1.y in range(f.s1.y.min, f.s1.y.max + 1):\n"
        "  for f.s1.x in range(f.s1.x.min, f.s1.x.max + 1):\n"
        "    for f.s1.r.x in range(3):\n"
        "      f[f.s1.y, f.s1.x] = f[f.s1.y, f.s1.x] + inp[f.s1.y, f.s1.x + f.s1.r.x]\n")
    stmt = lowered(f)
    assert loop_names(stmt) == ["f.s0.y", "f.s0.x", "f.s1.y", "f.s1.x", "f.s1.r.x"]
    assert stmt_to_str(loop(stmt, "f.s1.y")) == expected


def test_rdom_loops_run_outermost_dimension_first():
    """RDom((0, 2), (0, 3)) gives r.x outside r.y, with the RDom's own bounds."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((1, 2), (0, 3), name="r")
    f = halo.Func("f")
    f[()] = 0.0
    f[()] += inp[r.x, r.y]
    stmt = lowered(f)
    outer, inner = loop(stmt, "f.s1.r.x"), loop(stmt, "f.s1.r.y")
    assert loop_names(stmt) == ["f.s1.r.x", "f.s1.r.y"]
    assert (outer.min, outer.extent, inner.min, inner.extent) == \
        (n.const(1), n.const(2), n.const(0), n.const(3))


def test_rdom_where_becomes_a_guard_inside_the_reduction_loop():
    """r.where(pred) wraps the update's Provide in `if pred`, inside the loop over r."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 5), name="r")
    r.where(r.x % 2 == 0)
    f = halo.Func("f")
    f[x] = 0.0
    f[x] += inp[x, r.x]
    expected = (
        "for f.s1.r.x in range(5):\n"
        "  if f.s1.r.x % 2 == 0:\n"
        "    f[f.s1.x] = f[f.s1.x] + inp[f.s1.x, f.s1.r.x]\n")
    assert stmt_to_str(loop(lowered(f), "f.s1.r.x")) == expected


def test_update_split_on_rvar_keeps_reduction_order():
    """Splitting r.x of an update gives outer and inner loops over the RDom in order."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    r = halo.RDom((0, 8), name="r")
    f = halo.Func("f")
    f[()] = 0.0
    f[()] += inp[r.x]
    f.update(0).split(r.x, xo, xi, 4)
    stmt = lowered(f)
    assert loop_names(stmt) == ["f.s1.r.x.xo", "f.s1.r.x.xi"]
    assert loop(stmt, "f.s1.r.x.xo").extent == n.Div(n.Add(n.const(8), n.const(3)),
                                                      n.const(4))
    assert nodes_of(stmt, n.IfThenElse) == []


def test_compute_at_puts_produce_and_storage_inside_the_consumer_loop():
    """g.compute_at(f, y): the produce of g and its Realize are inside loop f.s0.y, before
    the x loop of f."""
    g, f = two_stage()
    g.compute_at(f, y)
    stmt = lowered(f)
    assert enclosing_loops(stmt, produce_of("g")) == ["f.s0.y"]
    assert enclosing_loops(stmt, storage_of("g")) == ["f.s0.y"]
    body = loop(stmt, "f.s0.y").body
    assert isinstance(body, n.Realize) and isinstance(body.body, n.ProducerConsumer)
    assert loop_names(body.body.produce) == ["g.s0.y", "g.s0.x"]
    assert loop_names(body.body.consume) == ["f.s0.x"]


def test_compute_root_puts_produce_before_every_loop_of_the_consumer():
    """g.compute_root(): g is produced and stored outside all of f's loops."""
    g, f = two_stage()
    g.compute_root()
    stmt = lowered(f)
    assert enclosing_loops(stmt, produce_of("g")) == []
    assert enclosing_loops(stmt, storage_of("g")) == []
    assert loop_names(stmt) == ["g.s0.y", "g.s0.x", "f.s0.y", "f.s0.x"]


def test_store_at_outside_compute_at_separates_storage_from_production():
    """store_at(f, yo) + compute_at(f, yi): Realize inside yo, produce inside yi."""
    g, f = two_stage()
    f.split(y, yo, yi, 4)
    g.store_at(f, yo).compute_at(f, yi)
    stmt = lowered(f)
    assert enclosing_loops(stmt, storage_of("g")) == ["f.s0.y.yo"]
    assert enclosing_loops(stmt, produce_of("g")) == ["f.s0.y.yo", "f.s0.y.yi"]


def test_store_root_with_compute_at_allocates_outside_every_loop():
    """store_root() + compute_at(f, y): Realize at the top, produce inside f.s0.y."""
    g, f = two_stage()
    g.store_root().compute_at(f, y)
    stmt = lowered(f)
    assert enclosing_loops(stmt, storage_of("g")) == []
    assert enclosing_loops(stmt, produce_of("g")) == ["f.s0.y"]


def test_compute_at_a_loop_of_an_update_stage():
    """g.compute_at(f.update(0), x) places g's produce inside loop f.s1.x."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = inp[x] * 2.0
    f[x] = 0.0
    f[x] += g[x] + g[x + 1]
    g.compute_at(f.update(0), x)
    assert enclosing_loops(lowered(f), produce_of("g")) == ["f.s1.x"]


def test_compute_at_a_loop_made_by_a_split_of_the_consumer():
    """Loops made by split are placement sites: g.compute_at(f, xo) sits inside
    f.s0.x.xo, outside f.s0.x.xi."""
    g, f = two_stage()
    f.split(x, xo, xi, 8)
    g.compute_at(f, xo)
    assert enclosing_loops(lowered(f), produce_of("g")) == ["f.s0.y", "f.s0.x.xo"]


def test_compute_at_a_loop_that_does_not_enclose_every_use_is_an_error():
    """g is read by f and by out; a loop of f can't hold g, and the error lists the legal
    levels."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    g, f, out = halo.Func("g"), halo.Func("f"), halo.Func("out")
    g[x] = inp[x]
    f[x] = g[x] * 2.0
    out[x] = f[x] + g[x]
    f.compute_root()
    g.compute_at(f, x)
    with pytest.raises(halo.ScheduleError, match="does not enclose every use of g") as info:
        lowered(out)
    assert "Legal levels, outermost first: root" in str(info.value)


def test_store_at_inside_compute_at_is_an_error():
    """Storage inside the compute level is refused."""
    g, f = two_stage()
    f.split(y, yo, yi, 4)
    g.store_at(f, yi).compute_at(f, yo)
    with pytest.raises(halo.ScheduleError, match="storage must be at or outside"):
        lowered(f)


def test_compute_at_a_loop_the_consumer_does_not_have_is_an_error():
    """compute_at(f, xo) without a split of f names a loop that does not exist."""
    g, f = two_stage()
    g.compute_at(f, xo)
    with pytest.raises(halo.ScheduleError, match="f has no loop named 'xo'"):
        lowered(f)


def _first_index(stmt: n.Stmt, match) -> int:
    return next(i for i, node in enumerate(walk(stmt)) if match(node))


def test_an_output_read_by_another_output_is_produced_first():
    """Pipeline([g, f]) where g reads f: f's loop must run before g's reads of f."""
    f, g = halo.Func("f"), halo.Func("g")
    f[x] = x * 2
    g[x] = f[x] + 1
    stmt = lowered([g, f])
    writes_f = _first_index(stmt, lambda s: isinstance(s, n.Provide) and s.name == "f")
    reads_f = _first_index(stmt, lambda e: isinstance(e, n.Call) and e.name == "f")
    assert writes_f < reads_f, stmt_to_str(stmt)


def test_a_root_func_reading_an_output_is_produced_after_that_output():
    """Outputs f and h, with g (compute_root) between them: g must read f after f's loop."""
    f, g, h = halo.Func("f"), halo.Func("g"), halo.Func("h")
    f[x] = x * 2
    g[x] = f[x] + 1
    h[x] = g[x] * 10
    g.compute_root()
    stmt = lowered([f, h])
    writes_f = _first_index(stmt, lambda s: isinstance(s, n.Provide) and s.name == "f")
    reads_f = _first_index(stmt, lambda e: isinstance(e, n.Call) and e.name == "f")
    assert writes_f < reads_f, stmt_to_str(stmt)


def test_round_up_inside_a_split_turns_the_outer_promise_into_a_clamp():
    """A round_up split of an inner loop lets it run past its range, so the variable
    rebuilt from it would too: x is clamped into its range instead of promised (a false
    promise made the allocation too small and writes overran the heap; found by random
    schedules)."""
    f = pointwise()
    v6, v7 = halo.vars("v6 v7")
    f.split(x, xo, xi, 4).split(xi, v6, v7, 3, tail="round_up")
    lets = {s.name: s.value for s in nodes_of(lowered(f), n.LetStmt)}
    assert not nodes_of(lets["f.s0.x"], n.Call)
    assert isinstance(lets["f.s0.x"], n.Min) and isinstance(lets["f.s0.x"].a, n.Max)
    assert not nodes_of(lets["f.s0.x.xi"], n.Call)


def test_guarded_and_shifted_splits_promise_their_range():
    """Without round_up below them, rebuilt variables promise their range to bounds
    inference."""
    f = pointwise()
    f.split(x, xo, xi, 4).split(y, yo, yi, 3, tail="guard")
    lets = {s.name: s.value for s in nodes_of(lowered(f), n.LetStmt)}
    for name in ("f.s0.x", "f.s0.y"):
        assert isinstance(lets[name], n.Call) and lets[name].name == "promise_clamped"


def tiled_with_producer(split_x: int = 8):
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x] * 2.0
    f[y, x] = g[y, x] + 1.0
    f.tile(y, x, yo, xo, yi, xi, 4, split_x)
    return g, f


def test_a_tiled_stage_with_a_producer_inside_gets_a_whole_tile_nest():
    """Under `whole_tiles[4 <= y extent and 8 <= x extent]`, f's variables are plain
    (`t + i`, no clamp, no guard): g's tile is a constant 4 x 8. The else branch keeps
    the clamped, guarded nest for smaller images."""
    g, f = tiled_with_producer()
    g.compute_at(f, xo)
    stmt = lowered(f)
    (choice,) = [s for s in walk(stmt) if isinstance(s, n.IfThenElse)
                 and n.is_whole_tiles(s.condition)]
    assert stmt_to_str(n.Evaluate(choice.condition.args[0])).strip() == \
        "4 <= f.s0.y.max - f.s0.y.min + 1 and 8 <= f.s0.x.max - f.s0.x.min + 1"
    whole, clamped = choice.then_case, choice.else_case
    assert not [c for c in walk(whole) if isinstance(c, n.Call) and c.name == "promise_clamped"]
    assert [c for c in walk(clamped) if isinstance(c, n.Call) and c.name == "promise_clamped"]
    assert loop_names(whole) == loop_names(clamped)
    # (both nests: the clamped one's g sized by its bound, the whole tile)
    allocs = [a for a in nodes_of(lower_until(f, "storage_flattening")[0], n.Allocate)
              if a.name == "g"]
    assert len(allocs) == 2 and all(a.scope == "stack" and a.size == n.const(32)
                                    for a in allocs)


def test_no_whole_tile_nest_without_a_producer_inside_or_a_short_extent():
    """Without a producer computed inside there is nothing to gain: one nest. With
    extents bound() to at least the tile, the choice is decided when lowering: one nest
    in the end."""
    g, f = tiled_with_producer()
    g.compute_root()
    assert not any(n.is_whole_tiles(s.condition) for s in walk(lowered(f))
                   if isinstance(s, n.IfThenElse))
    g, f = tiled_with_producer()
    f.bound(y, 0, 16).bound(x, 0, 20)
    g.compute_at(f, xo)
    (alloc,) = [a for a in nodes_of(f.lower().stmt, n.Allocate) if a.name == "g"]
    assert alloc.size == n.const(32)
