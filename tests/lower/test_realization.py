"""realization: where each Func is computed and stored, the defaults, and the placement
errors caught before any loop is built."""
from __future__ import annotations

import pytest

import halo
from halo.schedule.records import INLINE, ROOT, LoopLevel, PlacementKind

from .conftest import context_of

y, x, xo, xi = halo.vars("y x xo xi")


def chain():
    """inp -> a (pure) -> b (pure + update) -> c (pure) -> out, with out also reading a."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    a, b, c, out = halo.Func("a"), halo.Func("b"), halo.Func("c"), halo.Func("out")
    a[x] = inp[x]
    b[x] = a[x] + 1.0
    b[x] += 2.0
    c[x] = b[x] * 2.0
    out[x] = c[x] + a[x]
    return a, b, c, out


def pair(update: bool = False):
    """inp -> a -> out (a with an update a[x] += 1.0)."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    a, out = halo.Func("a"), halo.Func("out")
    a[x] = inp[x] * 2.0
    if update:
        a[x] += 1.0
    out[x] = a[x] + 1.0
    return a, out


def test_defaults_outputs_root_pure_inline_updates_root():
    """Unscheduled: out at root, a and c inline, b (which has an update) at root."""
    *_, out = chain()
    ctx = context_of(out)
    assert ctx.compute_levels == {"a": INLINE, "b": ROOT, "c": INLINE, "out": ROOT}
    assert ctx.store_levels == ctx.compute_levels
    assert ctx.realized() == ["b"]


def test_realized_funcs_are_listed_producers_first():
    """compute_root on every Func: realized() lists them in realization order."""
    a, b, c, out = chain()
    a.compute_root()
    c.compute_root()
    assert context_of(out).realized() == ["a", "b", "c"]


def _row_sums():
    """inp -> mid (pure, reads a halo.sum over 3 columns) -> out, 2-D."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 3))
    total = halo.sum(inp[y, x + r.x])
    mid, out = halo.Func("mid"), halo.Func("out")
    mid[y, x] = total * 2.0
    out[y, x] = mid[y, x] + 1.0
    return total.func, mid, out


def test_inline_reduction_is_computed_at_its_consumers_innermost_loop():
    """As in Halide: at the innermost loop of the stage that uses it, here through the
    inlined mid, so at out's x."""
    total, mid, out = _row_sums()
    assert context_of(out).compute_levels[total.name] == \
        LoopLevel(PlacementKind.AT, "out", 0, "x")
    mid.compute_root().split(x, xo, xi, 4)
    assert context_of(out).compute_levels[total.name] == \
        LoopLevel(PlacementKind.AT, "mid", 0, "xi")


def test_inline_reduction_stays_outside_vectorized_loops():
    """A vectorized innermost loop would turn serial around it: the loop outside it, in
    every specialization."""
    total, _, out = _row_sums()
    out.vectorize(x, 8)
    assert context_of(out).compute_levels[total.name] == \
        LoopLevel(PlacementKind.AT, "out", 0, "x")
    total, _, out = _row_sums()
    out.bound(x, 0, 8).specialize(halo.Param(halo.int32, "p") == 1).vectorize(x)
    assert context_of(out).compute_levels[total.name] == \
        LoopLevel(PlacementKind.AT, "out", 0, "y")


def test_inline_reduction_at_root_when_shared_or_placed_or_scalar():
    """Used by two stages, by a 0-D Func, or placed by the user: not moved."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    r = halo.RDom((0, 3))
    total = halo.sum(inp[x + r.x])
    a, out = halo.Func("a"), halo.Func("out")
    a[x] = total
    a.compute_root()
    out[x] = total + a[x]
    assert context_of(out).compute_levels[total.func.name] == ROOT
    grand = halo.sum(inp[r.x])
    scalar = halo.Func("scalar")
    scalar[()] = grand
    assert context_of(scalar).compute_levels[grand.func.name] == ROOT
    once = halo.sum(inp[x + r.x])
    b = halo.Func("b")
    b[x] = once
    once.func.store_root()
    assert context_of(b).store_levels[once.func.name] == ROOT
    assert context_of(b).compute_levels[once.func.name] == LoopLevel(PlacementKind.AT, "b", 0,
                                                                      "x")


def test_boundary_condition_func_is_inlined_by_default():
    """A boundary condition is a pure Func, so it is inlined unless placed."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    edge = halo.boundary.repeat_edge(inp)
    out = halo.Func("out")
    out[x] = edge[x + 1]
    assert context_of(out).compute_levels[edge.name] == INLINE


def test_explicit_placements_are_kept():
    """compute_at records the consumer's loop; the store level defaults to it."""
    a, out = pair()
    a.compute_at(out, x)
    ctx = context_of(out)
    level = LoopLevel(PlacementKind.AT, "out", 0, "x")
    assert (ctx.compute_levels["a"], ctx.store_levels["a"]) == (level, level)


def test_store_root_with_compute_at_keeps_both_levels():
    """store_root() + compute_at(out, x): stored at root, computed in out's x loop."""
    a, out = pair()
    a.store_root().compute_at(out, x)
    ctx = context_of(out)
    assert ctx.compute_levels["a"] == LoopLevel(PlacementKind.AT, "out", 0, "x")
    assert ctx.store_levels["a"] == ROOT


def test_compute_root_on_an_output_is_allowed():
    """An output is at root anyway, so compute_root() on it is no error."""
    _, out = pair()
    out.compute_root()
    assert context_of(out).compute_levels["out"] == ROOT


def test_compute_at_on_an_output_is_an_error():
    """An output can't be placed inside another Func's loops."""
    a, out = pair()
    a.compute_root()
    out.compute_at(a, x)
    with pytest.raises(halo.ScheduleError, match="out is an output of the pipeline"):
        context_of(out)


def test_compute_inline_on_an_output_is_an_error():
    """An output can't be inlined."""
    _, out = pair()
    out.compute_inline()
    with pytest.raises(halo.ScheduleError, match="out is an output of the pipeline"):
        context_of(out)


def test_compute_inline_of_a_func_with_updates_is_an_error():
    """A Func with an update definition can't be substituted into its uses."""
    a, out = pair(update=True)
    a.compute_inline()
    with pytest.raises(halo.ScheduleError, match=r"a.compute_inline\(\): a has update"):
        context_of(out)


def test_loop_schedule_on_a_default_inline_func_is_an_error():
    """Splitting a Func left inline (the default) names both ways out."""
    a, out = pair()
    a.split(x, xo, xi, 4)
    with pytest.raises(halo.ScheduleError, match="the default for a pure Func") as info:
        context_of(out)
    assert "a.compute_root()" in str(info.value)


def test_loop_schedule_on_an_explicit_inline_func_is_an_error():
    """vectorize + compute_inline() can't both hold."""
    a, out = pair()
    a.compute_inline().vectorize(x, 4)
    with pytest.raises(halo.ScheduleError, match=r"compute_inline\(\) was called"):
        context_of(out)


def test_store_level_on_an_inline_func_is_an_error():
    """store_root() without a compute level leaves the Func inline, with no storage."""
    a, out = pair()
    a.store_root()
    with pytest.raises(halo.ScheduleError, match="a is computed inline, so it has no storage"):
        context_of(out)
