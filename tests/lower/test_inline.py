"""inline: calls of inlined Funcs are replaced by their definitions, transitively.

`inline_calls` runs inside schedule_functions (on each Func's loops), so most tests look
at the output of that pass.
"""
from __future__ import annotations

import time

import pytest

import halo
from apps import harris
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str
from halo.lower.inline import inline_calls

from .conftest import context_of, lower_until, nodes_of

y, x = halo.vars("y x")


def lowered(outputs) -> n.Stmt:
    return lower_until(outputs, "schedule_functions")[0]


def calls_named(stmt: n.Stmt, name: str) -> list[n.Call]:
    return nodes_of(stmt, n.Call, name)


def test_inline_calls_substitutes_the_arguments_into_the_definition():
    """A Call g[a + 1, b] of g[y, x] = inp[y, x] * 2.0 becomes inp[a + 1, b] * 2.0."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x] * 2.0
    f[y, x] = g[y, x]
    ctx = context_of(f)
    call = n.Call(halo.float32, "g", (n.Add(n.Var("a"), n.const(1)), n.Var("b")),
                  n.CallKind.FUNC)
    assert expr_to_str(inline_calls(call, ctx, "f")) == "inp[a + 1, b] * 2.0"


def test_inline_calls_returns_the_same_node_when_nothing_is_inlined():
    """With no call of an inlined Func, the node comes back unchanged (the same object)."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = inp[x]
    f[x] = g[x]
    g.compute_root()
    ctx = context_of(f)
    expr = n.Add(n.Call(halo.float32, "g", (n.Var("i"),), n.CallKind.FUNC), n.const(1.0,
                                                                                   halo.float32))
    assert inline_calls(expr, ctx, "f") is expr


def test_inlined_funcs_leave_no_call_of_their_name():
    """h -> g -> f, with h and g pure and unscheduled: f's loops call only the input."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    h, g, f = halo.Func("h"), halo.Func("g"), halo.Func("f")
    h[y, x] = inp[y, x] + 1.0
    g[y, x] = h[y, x] * h[y, x + 1]
    f[y, x] = g[y + 1, x] - 3.0
    stmt = lowered(f)
    assert calls_named(stmt, "g") == [] and calls_named(stmt, "h") == []
    assert len(calls_named(stmt, "inp")) == 2


def test_inlined_definition_is_substituted_with_the_consumer_coordinates():
    """f[y, x] = g[x, y] + g[y, x + 1] reads the input transposed and shifted."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x] * 2.0
    f[y, x] = g[x, y] + g[y, x + 1]
    (provide,) = nodes_of(lowered(f), n.Provide, "f")
    assert expr_to_str(provide.value) == \
        "inp[f.s0.x, f.s0.y] * 2.0 + inp[f.s0.y, f.s0.x + 1] * 2.0"


def test_funcs_with_storage_are_not_inlined():
    """A compute_root Func stays a Call in its consumer."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = inp[x] * 2.0
    f[x] = g[x] + g[x + 1]
    g.compute_root()
    assert len(calls_named(lowered(f), "g")) == 2


def test_inlined_func_inside_a_computed_func_is_substituted_there():
    """h (inline) read by g (compute_root) read by f: g's produce reads the input, not h."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    h, g, f = halo.Func("h"), halo.Func("g"), halo.Func("f")
    h[x] = inp[x] - 1.0
    g[x] = h[x] * h[x]
    f[x] = g[x]
    g.compute_root()
    stmt = lowered(f)
    (produce,) = [pc for pc in nodes_of(stmt, n.ProducerConsumer) if pc.name == "g"]
    assert calls_named(stmt, "h") == []
    (provide,) = nodes_of(produce.produce, n.Provide, "g")
    assert expr_to_str(provide.value) == "(inp[g.s0.x] - 1.0) * (inp[g.s0.x] - 1.0)"


def test_boundary_condition_is_inlined_as_a_clamp():
    """repeat_edge(inp) is a pure Func: f reads inp at clamped coordinates directly."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    edge = halo.boundary.repeat_edge(inp)
    f = halo.Func("f")
    f[x] = edge[x - 1]
    stmt = lowered(f)
    assert calls_named(stmt, edge.name) == []
    (read,) = calls_named(stmt, "inp")
    assert expr_to_str(read.args[0]) == "min(max(f.s0.x - 1, 0), 0 + inp.extent.0 - 1)"


def test_inlined_func_in_an_update_and_its_rdom_predicate_is_substituted():
    """A pure Func used in an update's value and in its RDom's where() leaves no call."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = inp[x] * 2
    r = halo.RDom((0, 4), name="r")
    r.where(g[r.x] > 2)
    f[x] = 0
    f[x] += g[x + r.x]
    stmt = lowered(f)
    assert calls_named(stmt, "g") == []
    (guard,) = nodes_of(stmt, n.IfThenElse)
    assert expr_to_str(guard.condition) == "2 < inp[f.s1.r.x] * 2"


def _stencil_chain(stages: int, taps: int) -> halo.Func:
    """f1..f{stages}, each the sum of `taps` neighbours of the one before, all inlined."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    prev = halo.Func("f0")
    prev[x] = inp[x]
    for i in range(1, stages + 1):
        f = halo.Func(f"f{i}")
        f[x] = sum((prev[x + k] for k in range(1, taps)), prev[x])
        prev = f
    return prev


def test_an_exponential_inline_chain_is_refused_fast_naming_the_chain():
    """A chain of 3-tap stencils left inline triples at each stage (16 stages took 85 s
    and 1.4 GB): it is refused before anything is built, naming the chain and what to
    do."""
    f = _stencil_chain(40, 3)
    start = time.perf_counter()
    with pytest.raises(halo.ScheduleError,
                       match=r"^f40: inlining the chain f40 <- f39 <- .* <- f0 \(40 inlined "
                             r"Funcs\) .* grows exponentially .* f9\.compute_root\(\)"):
        f.lower()
    assert time.perf_counter() - start < 2


def test_a_long_chain_read_once_per_stage_inlines():
    """Size is counted with sharing: a chain that reads the Func before it once per stage
    grows linearly, and 200 stages inline."""
    f = _stencil_chain(200, 1)
    assert len(calls_named(lowered(f), "f0")) == 0


def test_harris_left_all_inline_still_lowers():
    """The limit leaves room for real programs: apps/harris.py at its default schedule
    (every stage inlined into the output) is about half of it."""
    *_, output, _ = harris.algorithm()
    assert len(nodes_of(lowered(output), n.Call, "image")) > 0
