"""The simplifier's memos: one instance reused across calls and contexts (as lowering
does) gives what a fresh simplifier gives for each call, and `sharing` hands it to
`simplify`, `can_prove` and interval bounds."""
from __future__ import annotations

from halo.analysis.boxes import AccessedNames, boxes_touched
from halo.analysis.interval import bounds_of_expr
from halo.analysis.simplify import Simplifier, shared_simplifier, sharing, simplify
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.printer import stmt_to_str
from halo.ir.types import int32

x, y = n.Var("x"), n.Var("y")


def _loop(name: str, extent: int, body: n.Stmt) -> n.Stmt:
    return n.For(name, const(0), const(extent), n.ForKind.SERIAL, body)


def _uses(e: n.Expr) -> n.Stmt:
    return n.Provide("f", e, (x,))


def test_a_result_found_under_one_loop_range_is_not_reused_under_another():
    """min(x, 5) is x for x in [0, 4) but not for x in [0, 10): the memo by structure
    and context must tell the two loops apart, whichever comes first."""
    clamp = n.Min(x, const(5))
    narrow, wide = _loop("x", 4, _uses(clamp)), _loop("x", 10, _uses(clamp))
    for first, second in ((narrow, wide), (wide, narrow)):
        shared = Simplifier()
        got = [stmt_to_str(shared.mutate(s)) for s in (first, second)]
        assert got == [stmt_to_str(simplify(s)) for s in (first, second)]
    assert "min(x, 5)" in stmt_to_str(Simplifier().mutate(wide))
    assert "min" not in stmt_to_str(Simplifier().mutate(narrow))


def test_an_expression_that_reads_no_loop_variable_is_simplified_once_for_all_loops():
    """The same y-only expression under two loops of different ranges: the second is a
    hit of the memo by structure and relevant context (it returns the first's node)."""
    shared = Simplifier()
    e = n.Add(n.Add(y, const(1)), const(2))
    a = shared.mutate(_loop("x", 4, _uses(e)))
    b = shared.mutate(_loop("x", 10, _uses(n.Add(n.Add(y, const(1)), const(2)))))
    assert a.body.value is b.body.value
    assert stmt_to_str(a.body).strip() == "f[x] = y + 3"


def test_a_replaced_variable_takes_the_range_of_its_replacement():
    """let x = y, with y's range different under two loops: min(x, 5) simplifies to y
    only where y < 5 (the context key holds the replacement's range)."""
    body = n.LetStmt("x", y, _uses(n.Min(x, const(5))))
    shared = Simplifier()
    narrow, wide = shared.mutate(_loop("y", 3, body)), shared.mutate(_loop("y", 9, body))
    assert stmt_to_str(narrow) == stmt_to_str(simplify(_loop("y", 3, body)))
    assert stmt_to_str(wide) == stmt_to_str(simplify(_loop("y", 9, body)))
    assert "min(y, 5)" in stmt_to_str(wide) and "min" not in stmt_to_str(narrow)


def test_a_statement_simplified_again_is_the_same_node():
    """A later simplify pass over IR the passes between left alone costs a lookup."""
    shared = Simplifier()
    stmt = _loop("x", 7, n.LetStmt("z", n.Add(x, const(1)), _uses(n.Mul(n.Var("z"), y))))
    once = shared.mutate(stmt)
    assert shared.mutate(once) is once
    assert shared.mutate(stmt) is once


def test_an_unused_let_in_a_long_chain_is_dropped_and_a_used_one_kept():
    """Whether a let's body uses it comes from the names each statement reads."""
    body: n.Stmt = _uses(n.Var("v0"))
    for i in range(200):
        body = n.LetStmt(f"v{i}", n.Add(y, const(i)), body)
    out = stmt_to_str(simplify(body))
    assert out.splitlines() == ["f[x] = y"]


def test_sharing_hands_one_simplifier_to_simplify_and_interval_bounds():
    shared = Simplifier()
    assert shared_simplifier() is not shared
    with sharing(shared):
        assert shared_simplifier() is shared
        e = n.Sub(n.Add(x, const(3)), x)
        assert simplify(e) == const(3)
        assert bounds_of_expr(n.Add(y, const(1)), {}).min == n.Add(y, const(1))
    assert shared_simplifier() is not shared
    assert shared.expr(n.Sub(n.Add(x, const(3)), x)) == const(3)


def test_accessed_names_shared_across_walks_give_the_same_boxes():
    """One AccessedNames for several boxes_touched walks of overlapping subtrees."""
    call = n.Call(int32, "g", (n.Add(x, const(1)),), n.CallKind.FUNC)
    inner = _loop("x", 5, n.Provide("f", call, (x,)))
    stmt = n.block(inner, n.Provide("h", n.Call(int32, "f", (const(2),), n.CallKind.FUNC),
                                    (const(0),)))
    accessed = AccessedNames()
    assert accessed.of(stmt) == {"f", "g", "h"} and accessed.of(inner) == {"f", "g"}
    for name in ("g", "f"):
        assert boxes_touched(stmt, name, accessed=accessed) == boxes_touched(stmt, name)
    box = boxes_touched(stmt, "g", accessed=accessed)
    assert (box[0].min, box[0].max) == (const(1), const(5))
