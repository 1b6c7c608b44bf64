"""constant_upper_bound: constant bounds found by weakening mins and maxes, checked
against brute-force evaluation."""
from __future__ import annotations

import itertools

import pytest

from halo.analysis.upper_bound import constant_upper_bound
from halo.ir import nodes as n
from halo.ir.nodes import const

t, e = n.Var("t"), n.Var("e")


def _clipped_tile(width: int) -> n.Expr:
    """The extent of a tile [t, t + width - 1] clipped to [0, e - 1]."""
    lo = n.Max(t, const(0))
    hi = n.Min(n.Add(t, const(width - 1)), n.Sub(e, const(1)))
    return n.Add(n.Sub(hi, lo), const(1))


def _evaluate(expr: n.Expr, env: dict[str, int]) -> int:
    match expr:
        case n.Const(value=v):
            return v
        case n.Var(name=name):
            return env[name]
    a, b = _evaluate(expr.a, env), _evaluate(expr.b, env)
    return {n.Add: a + b, n.Sub: a - b, n.Mul: a * b, n.Min: min(a, b),
            n.Max: max(a, b)}[type(expr)]


@pytest.mark.parametrize("width", [1, 4, 8])
def test_clipped_tile_is_bounded_by_the_tile(width):
    """min(t + w - 1, e - 1) - max(t, 0) + 1 <= w, and the bound is attained."""
    expr = _clipped_tile(width)
    assert constant_upper_bound(expr) == width
    values = [_evaluate(expr, {"t": tv, "e": ev})
              for tv, ev in itertools.product(range(-5, 20), range(0, 20))]
    assert max(values) == width


def test_scaled_and_nested():
    """Multiplication by a constant and maxes of bounded terms."""
    expr = n.Max(n.Mul(_clipped_tile(4), const(3)), const(5))
    assert constant_upper_bound(expr) == 12


def test_unbounded_is_none():
    """An extent that grows with a variable has no constant bound."""
    assert constant_upper_bound(n.Add(e, const(2))) is None
    assert constant_upper_bound(n.Sub(n.Min(t, e), n.Min(t, const(0)))) is None
