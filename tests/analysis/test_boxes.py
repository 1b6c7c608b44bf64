"""Tests of the regions a statement reads and writes (halo.analysis.boxes)."""
from __future__ import annotations

import random

import pytest

from halo.analysis.boxes import Access, Box, box_union, boxes_touched, boxes_touched_each
from halo.analysis.interval import Interval
from halo.analysis.simplify import simplify
from halo.errors import InternalError
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str
from halo.ir.substitute import substitute
from halo.ir.types import Type, int32, uint8

x, y, r, m, e = (n.Var(name) for name in ("x", "y", "r", "m", "e"))
W, H = n.Var("W"), n.Var("H")


def c(value: int) -> n.Const:
    return n.const(value)


def g(*args: n.Expr, t: Type = int32) -> n.Call:
    return n.Call(t, "g", args, n.CallKind.FUNC)


def loop(name: str, lo: n.Expr, extent: n.Expr, body: n.Stmt) -> n.For:
    return n.For(name, lo, extent, n.ForKind.SERIAL, body)


def shown(box: Box | None) -> str | None:
    if box is None:
        return None
    def side(v: n.Expr | None) -> str:
        return "None" if v is None else expr_to_str(v)
    return ", ".join(f"[{side(i.min)}, {side(i.max)}]" for i in box)


def stencil() -> n.Stmt:
    """for x in range(m, m + e): f[x] = g[x - 1] + g[x + 1]"""
    value = n.Add(g(n.Sub(x, c(1))), g(n.Add(x, c(1))))
    return loop("x", m, e, n.Provide("f", value, (x,)))


def test_stencil_reads_are_relaxed_over_the_loop() -> None:
    """A 3-point stencil over [m, m + e) reads g over [m - 1, m + e]."""
    assert shown(boxes_touched(stencil(), "g")) == "[m - 1, e + m]"


def test_provides_and_calls_are_selected_by_flags() -> None:
    """provides=True collects writes; calls=False ignores reads; nothing found is None."""
    assert shown(boxes_touched(stencil(), "f", provides=True)) == "[m, e + m - 1]"
    assert boxes_touched(stencil(), "f") is None
    assert boxes_touched(stencil(), "g", calls=False, provides=True) is None
    assert boxes_touched(stencil(), "h") is None


def test_two_dimensional_loop_nest() -> None:
    """Each dimension of the box has its own interval, outermost first."""
    body = n.Provide("f", g(n.Add(y, c(1)), n.Mul(x, c(2))), (y, x))
    nest = loop("y", c(0), H, loop("x", c(0), W, body))
    assert shown(boxes_touched(nest, "g")) == "[1, H], [0, W * 2 - 2]"


def test_lets_bind_the_interval_of_their_value() -> None:
    """LetStmt and Let names stand for the interval of their value."""
    t = n.Var("t")
    stmt = loop("x", c(0), c(10), n.LetStmt("t", n.Mul(x, c(2)), n.Evaluate(g(t))))
    assert shown(boxes_touched(stmt, "g")) == "[0, 18]"
    expr = loop("x", c(0), c(10), n.Evaluate(n.Let("t", n.Add(x, c(5)), g(t))))
    assert shown(boxes_touched(expr, "g")) == "[5, 14]"


def test_if_then_else_tightens_the_loop_variable() -> None:
    """Inside `if x < 10` the loop variable is below 10, and at least 10 in the else
    branch."""
    then_case = loop("x", c(0), c(100), n.IfThenElse(n.LT(x, c(10)), n.Evaluate(g(x))))
    assert shown(boxes_touched(then_case, "g")) == "[0, 9]"
    else_case = loop("x", c(0), c(100), n.IfThenElse(
        n.LT(x, c(10)), n.Evaluate(c(0)), n.Evaluate(g(x))))
    assert shown(boxes_touched(else_case, "g")) == "[10, 99]"
    both = loop("x", c(0), c(100), n.IfThenElse(
        n.And(n.LE(c(20), x), n.LE(x, m)), n.Evaluate(g(x))))
    assert shown(boxes_touched(both, "g")) == "[20, min(m, 99)]"
    negated = loop("x", c(0), c(100), n.IfThenElse(
        n.Not(n.LT(c(50), x)), n.Evaluate(g(x))))
    assert shown(boxes_touched(negated, "g")) == "[0, 50]"


def test_branch_on_a_condition_outside_the_scope_selects_the_box() -> None:
    """`if W == 12` (no variable in scope: a specialization) takes one branch for the
    whole walk: the box is the select of the branches' boxes, not their union. A branch
    touching nothing leaves the other's box."""
    branches = n.IfThenElse(n.EQ(W, c(12)), loop("x", c(0), c(12), n.Evaluate(g(x))),
                            loop("x", c(0), W, n.Evaluate(g(n.Add(x, c(1))))))
    assert shown(boxes_touched(branches, "g")) \
        == "[select(W == 12, 0, 1), select(W == 12, 11, W)]"
    one_sided = n.IfThenElse(n.EQ(W, c(12)), n.Evaluate(c(0)), n.Evaluate(g(c(3))))
    assert shown(boxes_touched(one_sided, "g")) == "[3, 3]"
    in_scope = loop("x", c(0), W, n.IfThenElse(n.LT(x, c(12)), n.Evaluate(g(x)),
                                                n.Evaluate(g(n.Add(x, c(1))))))
    assert shown(boxes_touched(in_scope, "g")) == "[0, max(min(W - 1, 11), W)]"  # a union


def test_data_dependent_index_is_bounded_by_the_index_type() -> None:
    """A histogram update hist[inp[r]] with uint8 inp touches hist over [0, 255]."""
    inp = n.Call(uint8, "inp", (r,), n.CallKind.INPUT)
    index = n.Cast(int32, inp)
    hist = n.Call(int32, "hist", (index,), n.CallKind.FUNC)
    update = loop("r", c(0), e, n.Provide("hist", n.Add(hist, c(1)), (index,)))
    assert shown(boxes_touched(update, "hist", provides=True)) == "[0, 255]"
    assert shown(boxes_touched(update, "inp")) == "[0, e - 1]"
    unbounded = loop("r", c(0), e, n.Evaluate(g(g(r))))
    assert shown(boxes_touched(unbounded, "g")) == "[None, None]"


def test_wrappers_are_walked_and_scope_is_used() -> None:
    """ProducerConsumer, Realize and Block are walked; an initial scope bounds free
    variables."""
    body = n.ProducerConsumer("f", n.block(n.Evaluate(g(c(3))), stencil()), n.NO_OP)
    realize = n.Realize("f", int32, ((m, e),), body)
    assert shown(boxes_touched(realize, "g")) == "[min(m - 1, 3), max(e + m, 3)]"
    scope = {"m": Interval(c(0), c(10)), "e": Interval(c(1), c(5))}
    assert shown(boxes_touched(realize, "g", scope=scope)) == "[-1, 15]"


def test_boxes_of_several_accesses_in_one_walk() -> None:
    """boxes_touched_each gives, per access, what boxes_touched gives alone: reads and
    writes of different Funcs under an if, a let and loops, in one walk."""
    inp = n.Call(int32, "inp", (n.Add(y, c(2)),), n.CallKind.INPUT)
    cond = n.LT(x, n.Var("k"))
    inner = n.IfThenElse(cond, n.Provide("f", n.Add(g(x, inp), c(1)), (x, y)),
                         n.Provide("f", g(n.Sub(x, c(1)), y), (x, y)))
    stmt = loop("y", c(0), H, n.LetStmt("k", n.Mul(y, c(2)), loop("x", m, e, inner)))
    accesses = [Access("g"), Access("inp"), Access("f", calls=False, provides=True),
                Access("f"), Access("g", calls=True, provides=True), Access("h")]
    each = boxes_touched_each(stmt, accesses)
    alone = [boxes_touched(stmt, a.name, calls=a.calls, provides=a.provides)
             for a in accesses]
    assert [shown(b) for b in each] == [shown(b) for b in alone]
    assert shown(each[1]) == "[2, H + 1]" and each[3] is None and each[5] is None


def test_box_union() -> None:
    """box_union is per-dimension union, None is the empty box, dimensions must agree."""
    a = (Interval(c(0), c(4)), Interval(m, m))
    b = (Interval(c(2), c(9)), Interval(n.Sub(m, c(1)), e))
    assert shown(box_union(a, b)) == "[0, 9], [m - 1, max(e, m)]"
    assert box_union(None, a) is a and box_union(a, None) is a
    with pytest.raises(InternalError):
        box_union(a, (Interval(c(0), c(1)),))


def _affine(rng: random.Random, names: list[str]) -> n.Expr:
    e: n.Expr = c(rng.randint(-3, 3))
    for name in rng.sample(names, rng.randint(1, len(names))):
        term = n.Mul(n.Var(name), c(rng.choice([1, 1, -1, 2])))
        e = n.Add(e, term)
    if rng.random() < 0.3:
        e = rng.choice([n.Min, n.Max])(e, c(rng.randint(-2, 6)))
    if rng.random() < 0.2:
        e = n.Div(e, c(rng.choice([2, 3])))
    return e


def evaluate(e: n.Expr, env: dict[str, int]) -> int:
    """The value of an int32 expression with every variable given, by constant folding."""
    value = simplify(substitute(e, {k: n.const(v) for k, v in env.items()}))
    assert isinstance(value, n.Const), expr_to_str(value)
    return value.value


def _touched_coordinates(stmt: n.Stmt, env: dict[str, int], out: list[int]) -> None:
    """Run the loop nest in Python, collecting g's coordinates (only For, If, Evaluate)."""
    match stmt:
        case n.For(name=name, min=lo, extent=extent, body=body):
            start = evaluate(lo, env)
            for i in range(start, start + evaluate(extent, env)):
                _touched_coordinates(body, {**env, name: i}, out)
        case n.IfThenElse(condition=cond, then_case=then_case, else_case=else_case):
            branch = then_case if evaluate(cond, env) else else_case
            if branch is not None:
                _touched_coordinates(branch, env, out)
        case n.Evaluate(value=n.Call(args=(arg,))):
            out.append(evaluate(arg, env))


@pytest.mark.parametrize("seed", range(3))
def test_boxes_contain_every_coordinate_touched(seed: int) -> None:
    """For random loop nests with conditions, every coordinate read lies in the box."""
    rng = random.Random(seed)
    for _ in range(150):
        inner = n.Evaluate(g(_affine(rng, ["x", "y"])))
        if rng.random() < 0.6:
            op, k = rng.choice([n.LT, n.LE]), c(rng.randint(-2, 8))
            cond = op(x, k) if rng.random() < 0.5 else op(k, x)
            inner = n.IfThenElse(cond, inner, n.Evaluate(g(_affine(rng, ["x"]))))
        nest = loop("y", c(rng.randint(-3, 3)), c(rng.randint(1, 4)),
                    loop("x", _affine(rng, ["y"]), c(rng.randint(1, 5)), inner))
        (box,) = boxes_touched(nest, "g")
        lo, hi = evaluate(box.min, {}), evaluate(box.max, {})
        touched: list[int] = []
        _touched_coordinates(nest, {}, touched)
        assert all(lo <= v <= hi for v in touched), (shown((box,)), touched)
