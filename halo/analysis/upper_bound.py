"""A constant upper bound of an integer expression, when one follows from its shape.

`constant_upper_bound(e)` looks for the smallest constant c with e <= c that it can show
by weakening the mins and maxes in `e`: min(a, b) <= a and <= b, max(a, b) >= a and >= b.
It tries the combinations (a bounded number of them), simplifies each, and keeps the
constants. This is what makes the extent of a tile's region, e.g.
`min(t + 7, n - 1) - max(t, 0) + 1`, bounded by 8 (the tile width), so the tile can live
on the stack. Assumes no overflow (as the simplifier does).
"""
from __future__ import annotations

import itertools

from halo.analysis.simplify import simplify
from halo.ir import nodes as n

_MAX_CANDIDATES = 32


def constant_upper_bound(e: n.Expr) -> int | None:
    """The smallest constant upper bound of `e` found, or None."""
    found = [c.value for c in (simplify(x) for x in _upper(e)) if isinstance(c, n.Const)]
    return int(min(found)) if found else None


def _limit(xs: list[n.Expr]) -> list[n.Expr]:
    return xs[:_MAX_CANDIDATES]


def _pairs(op, xs: list[n.Expr], ys: list[n.Expr]) -> list[n.Expr]:
    return _limit([op(x, y) for x, y in itertools.product(xs, ys)])


def _upper(e: n.Expr) -> list[n.Expr]:
    """Expressions each >= e, e itself first (so equal terms on both sides of a
    subtraction can cancel)."""
    return _limit([e, *_weakened_upper(e)])


def _lower(e: n.Expr) -> list[n.Expr]:
    """Expressions each <= e, e itself first."""
    return _limit([e, *_weakened_lower(e)])


def _weakened_upper(e: n.Expr) -> list[n.Expr]:
    match e:
        case n.Min(a=a, b=b):
            return _limit([*_upper(a), *_upper(b)])
        case n.Max(a=a, b=b):
            return _pairs(n.Max, _upper(a), _upper(b))
        case n.Add(a=a, b=b):
            return _pairs(n.Add, _upper(a), _upper(b))
        case n.Sub(a=a, b=b):
            return _pairs(n.Sub, _upper(a), _lower(b))
        case n.Mul(a=a, b=n.Const(value=c)) if c >= 0:
            return [n.Mul(x, n.const(c, e.type)) for x in _upper(a)]
        case n.Div(a=a, b=n.Const(value=c)) if c > 0:  # floor division is monotonic
            return [n.Div(x, n.const(c, e.type)) for x in _upper(a)]
    return []


def _weakened_lower(e: n.Expr) -> list[n.Expr]:
    match e:
        case n.Max(a=a, b=b):
            return _limit([*_lower(a), *_lower(b)])
        case n.Min(a=a, b=b):
            return _pairs(n.Min, _lower(a), _lower(b))
        case n.Add(a=a, b=b):
            return _pairs(n.Add, _lower(a), _lower(b))
        case n.Sub(a=a, b=b):
            return _pairs(n.Sub, _lower(a), _upper(b))
        case n.Mul(a=a, b=n.Const(value=c)) if c >= 0:
            return [n.Mul(x, n.const(c, e.type)) for x in _lower(a)]
        case n.Div(a=a, b=n.Const(value=c)) if c > 0:
            return [n.Div(x, n.const(c, e.type)) for x in _lower(a)]
    return []
