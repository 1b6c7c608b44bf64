"""Region checks compiled to Python agree with the simplifier's evaluation and follow
halo's integer semantics."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import halo
from halo.analysis.python_source import _div, _mod, python_source
from halo.analysis.simplify import simplify
from halo.errors import InternalError
from halo.ir import nodes as n
from halo.ir.substitute import substitute
from halo.ir.types import bool_, float32, int32, int64, uint8
from halo.lower.bounds_inference import RegionCheck
from halo.runtime.host_checks import compile_checks

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
    source = python_source(expr, {})
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


p = n.Var("p", float32)
a64, a8 = n.Cast(int64, a), n.Cast(uint8, a)
PURE = [
    n.Call(int32, "abs", (n.Sub(a, n.const(5)),), n.CallKind.MATH),
    n.Max(n.Call(int32, "abs", (a,), n.CallKind.MATH), b),
    n.Cast(int32, n.Call(float32, "floor", (n.Mul(p, n.const(1.5, float32)),),
                         n.CallKind.MATH)),
    n.Cast(int32, n.Div(n.Cast(float32, a), n.const(3.0, float32))),  # truncates to zero
    n.Cast(int32, n.Mul(a8, n.const(40, uint8))),  # uint8 wraps
    n.Cast(int32, n.Mul(n.Mul(a64, n.const(1 << 40, int64)), a64)),  # int64 -> int32 wraps
    n.Xor(a, b), n.And(a, n.const(6)), n.Or(a, b), n.Not(a),  # bitwise on integers
    n.Cast(int32, n.Cast(bool_, a)),  # bool is a != 0
    n.Let("t", n.Add(a, b), n.Mul(n.Var("t"), n.Var("t"))),
    n.Select(n.LT(p, n.const(0.5, float32)), a, b),
]


@pytest.mark.parametrize("expr", PURE, ids=range(len(PURE)))
def test_every_pure_scalar_expression_matches_constant_folding(expr):
    """Math calls (abs), casts that wrap, round or truncate, float and narrow arithmetic,
    bitwise ops and lets evaluate as the IR defines them (the simplifier's folding)."""
    run = compile_checks([_single(expr)])
    for va, vb, vp in itertools.product([-7, -1, 0, 1, 5, 300], [-3, 0, 2], [-1.3, 0.25, 2.5]):
        consts = {"a": n.const(va), "b": n.const(vb), "p": n.const(vp, float32)}
        want = simplify(substitute(expr, consts))
        assert isinstance(want, n.Const)
        # The check [e, e] in [e, e]: never fails, so read e from a failing variant.
        failing = compile_checks([RegionCheck("x", 0, expr, expr, n.Add(expr, n.const(1)),
                                              n.const(1), "input")])
        assert run({"a": va, "b": vb, "p": vp}) is None
        assert failing({"a": va, "b": vb, "p": vp})[1] == want.value, (expr, va, vb, vp)


def test_expressions_that_read_memory_are_internal_errors():
    """A Load in a region check can't be evaluated before running: a compiler bug,
    reported as one."""
    with pytest.raises(InternalError, match="can.t be evaluated"):
        compile_checks([_single(n.Load(int32, "buf", a))])


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


def test_a_call_like_one_before_skips_the_checks_and_any_other_is_checked():
    """A Kernel keeps the checked scalars of a call by its arrays' shapes and strides and
    its scalars: the same again runs without checking, but another size, another view or
    another Param value is checked (and refused where it reads past an input), and a
    refused call is refused again."""
    x = halo.Var("x")
    inp, shift = halo.ImageParam(halo.float32, 1, "inp"), halo.Param(halo.int32, "shift", 0)
    f = halo.Func("f")
    f[x] = inp[x + shift] * 2.0
    kernel = f.compile()
    data = np.arange(10, dtype=np.float32)
    calls = []
    checks = kernel._checked_scalars
    kernel._checked_scalars = lambda *args: calls.append(args) or checks(*args)
    for _ in range(3):
        np.testing.assert_array_equal(kernel((8,), inp=data), data[:8] * 2)
    assert len(calls) == 1
    np.testing.assert_array_equal(kernel((8,), inp=data, shift=2), data[2:] * 2)
    np.testing.assert_array_equal(kernel((5,), inp=data[::2]), data[::2] * 2)
    assert len(calls) == 3
    for _ in range(2):
        with pytest.raises(halo.BoundsError, match="inp"):
            kernel((8,), inp=data, shift=3)
        with pytest.raises(halo.BoundsError, match="inp"):
            kernel((11,), inp=data)
    assert len(calls) == 7
