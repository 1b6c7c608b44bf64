"""Region checks compiled to Python agree with the simplifier's evaluation and follow
halo's integer semantics."""
from __future__ import annotations

import itertools

import pytest

from halo.analysis.simplify import simplify
from halo.backends.host_checks import _div, _mod, _py, compile_checks
from halo.errors import InternalError
from halo.ir import nodes as n
from halo.ir.substitute import substitute
from halo.ir.types import float32
from halo.lower.bounds_inference import RegionCheck

a, b = n.Var("a"), n.Var("b")
EXPRS = [n.Div(a, b), n.Mod(a, b), n.Min(n.Add(a, n.const(3)), n.Mul(b, n.const(2))),
         n.Max(n.Sub(a, b), n.const(0)), n.Select(n.LT(a, b), a, b),
         n.Select(n.And(n.LE(a, b), n.Not(n.EQ(a, n.const(0)))), n.const(1), n.const(2))]


def _single(expr: n.Expr):
    """A check whose lo is `expr` (and that always passes), to read `expr`'s value."""
    return RegionCheck("x", 0, expr, expr, expr, n.const(1), "input")


@pytest.mark.parametrize("expr", EXPRS, ids=range(len(EXPRS)))
def test_compiled_expressions_match_the_simplifier(expr):
    """Every operator evaluates as halo's IR does, including floor division and modulo of
    negatives and division by zero."""
    source = _py(expr, {})
    for va, vb in itertools.product([-7, -1, 0, 1, 5], [-3, 0, 2]):
        want = simplify(substitute(expr, {"a": n.const(va), "b": n.const(vb)}))
        got = eval(source, {"_div": _div, "_mod": _mod, "v": {"a": va, "b": vb}})
        assert int(got) == want.value, (source, va, vb)


def test_first_failing_check_is_returned_with_its_numbers():
    """A read of [a - 1, a + 3] of an input of extent b fails exactly when it leaves
    [0, b - 1], and reports the evaluated range."""
    check = RegionCheck("inp", 1, n.Sub(a, n.const(1)), n.Add(a, n.const(3)), n.const(0), b,
                        "input")
    run = compile_checks([check])
    assert run({"a": 1, "b": 5}) is None
    assert run({"a": 0, "b": 5}) == (check, -1, 3, 0, 5)
    assert run({"a": 2, "b": 5}) == (check, 1, 5, 0, 5)


def test_an_empty_range_never_fails():
    """Nothing is accessed when hi < lo, whatever the extent."""
    check = RegionCheck("inp", 0, n.const(4), n.const(3), n.const(0), n.const(0), "input")
    assert compile_checks([check])({}) is None


def test_unsupported_expressions_are_internal_errors():
    """A float operation in a region check is a compiler bug, reported as one."""
    with pytest.raises(InternalError, match="can't evaluate"):
        compile_checks([_single(n.Call(n.Var("f").type, "sqrt", (a,), n.CallKind.MATH))])


def test_a_check_under_a_condition_runs_only_when_it_holds():
    """A specialization's check (reading [0, a + 3] of extent b) is skipped unless its
    condition (here over a float Param p) holds."""
    p = n.Var("p", float32)
    when = n.LT(n.const(0.5, float32), p)
    check = RegionCheck("inp", 0, n.const(0), n.Add(a, n.const(3)), n.const(0), b, "input",
                        when)
    run = compile_checks([check])
    assert run({"a": 10, "b": 4, "p": 0.25}) is None
    assert run({"a": 10, "b": 4, "p": 0.75}) == (check, 0, 13, 0, 4)
    assert run({"a": 0, "b": 4, "p": 0.75}) is None
