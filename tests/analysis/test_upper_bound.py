"""constant_upper_bound: constant bounds found by weakening mins and maxes, checked
against brute-force evaluation."""
from __future__ import annotations

import itertools

import numpy as np
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


def test_a_window_clipped_at_its_end_only():
    """The rows [t, t + 7] of a step clamped to the last row e - 1 at both ends (a
    reduction split whose tail is guarded): min(t + 7, e - 1) - min(t, e - 1) + 1 <= 8.
    Lifting the left min first leaves leaves bounded only together; the right one first
    bounds them alone."""
    last = n.Sub(e, const(1))
    expr = n.Add(n.Sub(n.Min(n.Add(t, const(7)), last), n.Min(t, last)), const(1))
    assert constant_upper_bound(expr) == 8
    values = [_evaluate(expr, {"t": tv, "e": ev})
              for tv, ev in itertools.product(range(-5, 20), range(0, 20))]
    assert max(values) == 8


def test_a_min_with_a_constant_keeps_the_constant_among_many_candidates():
    """The threads over a tile's columns, 4 a thread, where the tile [s, s + 31] is
    shifted inwards into a region [0, m] that is itself clipped: (min(m - s - 31, 0) + 31)
    // 4 + 1 <= 8. The min's first operand weakens in more ways than the candidates kept
    (m and s are mins and maxes), so its 0 must be among the first of them."""
    m = n.Min(n.Add(n.Max(n.Sub(e, const(64)), const(0)), const(63)), n.Sub(e, const(1)))
    s = n.Max(n.Min(n.Mul(n.Mod(t, n.Add(n.Div(m, const(32)), const(1))), const(32)),
                    n.Sub(m, const(31))), const(0))
    threads = n.Add(n.Div(n.Add(n.Min(n.Sub(n.Sub(m, s), const(31)), const(0)), const(31)),
                          const(4)), const(1))
    assert constant_upper_bound(threads) == 8


def test_tile_split_again_inside_a_clipped_tile():
    """The region of rows of a tile [b, b + 31] (b clipped to the image) cut into steps of
    8 with the last step shifted inwards, plus a margin of 3: the same clipped start b
    appears on both sides of the subtraction, inside mins and maxes. Weakening alone
    finds no constant; lifting the mins and maxes above the sums finds the tile's 38."""
    b = n.Max(n.Min(n.Mul(t, const(32)), n.Sub(e, const(32))), const(0))
    last = n.Add(n.Max(n.Add(n.Min(n.Sub(n.Sub(e, b), const(32)), const(0)), const(24)),
                       const(0)), const(7))
    hi = n.Max(n.Add(n.Max(n.Add(b, last), n.Min(n.Add(b, const(31)), n.Sub(e, const(1)))),
                     const(3)), n.Min(n.Add(b, const(31)), n.Sub(e, const(1))))
    extent = n.Add(n.Sub(hi, n.Sub(b, const(3))), const(1))
    assert constant_upper_bound(extent) == 38
    values = [_evaluate(extent, {"t": tv, "e": ev})
              for tv, ev in itertools.product(range(0, 6), range(32, 200))]
    assert max(values) <= 38
    assert 38 in values


def _random_expr(rng, depth: int) -> n.Expr:
    if depth == 0 or rng.random() < 0.2:
        return [t, e, const(int(rng.integers(-8, 9)))][int(rng.integers(0, 3))]
    op = [n.Add, n.Sub, n.Min, n.Max, n.Mul][int(rng.integers(0, 5))]
    if op is n.Mul:
        return n.Mul(_random_expr(rng, depth - 1), const(int(rng.integers(-3, 4))))
    return op(_random_expr(rng, depth - 1), _random_expr(rng, depth - 1))


def test_bounds_found_hold_everywhere():
    """On random expressions of mins, maxes, sums and constant multiples of two variables,
    every bound found is >= the expression's value at every point of a grid (lifting and
    making shared terms opaque are both exact rewrites)."""
    rng = np.random.default_rng(7)
    grid = list(itertools.product(range(-12, 13, 2), range(-12, 13, 2)))
    found = 0
    for _ in range(400):
        expr = _random_expr(rng, 4)
        bound = constant_upper_bound(expr)
        if bound is not None:
            found += 1
            assert max(_evaluate(expr, {"t": tv, "e": ev}) for tv, ev in grid) <= bound, \
                expr
    assert found > 40
