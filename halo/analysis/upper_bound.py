"""A constant upper bound of an integer expression, when one follows from its shape.

`constant_upper_bound(e)` looks for the smallest constant c with e <= c that it can show
by weakening the mins and maxes in `e`: min(a, b) <= a and <= b, max(a, b) >= a and >= b.
It tries the combinations (a bounded number of them), simplifies each, and keeps the
constants. This is what makes the extent of a tile's region, e.g.
`min(t + 7, n - 1) - max(t, 0) + 1`, bounded by 8 (the tile width), so the tile can live
on the stack.

Weakening alone loses where the same term sits on both sides of a subtraction inside
mins and maxes, as in the region of a tile split again inside a clipped tile:
`max(b + min(n - b, 24) + 7, min(b + 31, n)) - b`. So it first lifts the mins and maxes
above the sums, differences and constant multiples (`max(x, y) - b` is
`max(x - b, y - b)`), where each leaf simplifies on its own (`b + 7 - b` is 7), and then
bounds the leaves: min(a, b) <= the smaller bound found, max(a, b) <= the larger of both.
Assumes no overflow (as the simplifier does).
"""
from __future__ import annotations

import itertools

from halo.analysis.simplify import simplify
from halo.ir import nodes as n
from halo.ir.visitor import rewrite

_MAX_CANDIDATES = 32
_MAX_LIFTED_NODES = 4096


def constant_upper_bound(e: n.Expr) -> int | None:
    """The smallest constant upper bound of `e` found, or None."""
    found = [b for b in (_weakened_bound(e), _lifted_bound(e),
                         _lifted_bound(_opaque_shared_terms(e))) if b is not None]
    return min(found) if found else None


def _weakened_bound(e: n.Expr) -> int | None:
    """The smallest constant among `e`'s weakenings, simplified, or None."""
    found = [c.value for c in (simplify(x) for x in _upper(e)) if isinstance(c, n.Const)]
    return int(min(found)) if found else None


def _opaque_shared_terms(e: n.Expr) -> n.Expr:
    """`e` with each min or max that it both adds and subtracts (a tile's clipped start
    `b` in `max(b + x, ...) - b`) replaced by a variable, so that lifting cancels it
    rather than splitting it into terms that don't."""
    signs: dict[n.Expr, set[int]] = {}
    _collect_signs(e, 1, signs)
    shared = {t: n.Var(f"_upper_bound_term{i}", t.type)
              for i, t in enumerate(t for t, s in signs.items() if len(s) == 2)}
    return rewrite(e, shared.get) if shared else e


def _collect_signs(e: n.Expr, sign: int, signs: dict[n.Expr, set[int]]) -> None:
    match e:
        case n.Min(a=a, b=b) | n.Max(a=a, b=b):
            signs.setdefault(e, set()).add(sign)
            _collect_signs(a, sign, signs)
            _collect_signs(b, sign, signs)
        case n.Add(a=a, b=b):
            _collect_signs(a, sign, signs)
            _collect_signs(b, sign, signs)
        case n.Sub(a=a, b=b):
            _collect_signs(a, sign, signs)
            _collect_signs(b, -sign, signs)
        case n.Mul(a=a, b=n.Const(value=c)):
            _collect_signs(a, sign if c >= 0 else -sign, signs)


class _TooBig(Exception):
    pass


def _spend(budget: list[int]) -> None:
    """One node more of the lifted expression (lifting can double it at each level)."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig


def _lifted_bound(e: n.Expr) -> int | None:
    """The smaller bound of `e` with its mins and maxes lifted to the top, the left
    operand's first or the right one's, or None. The order decides which of them ends up
    outside, and the bounds of the leaves see only the outer: `min(a + 7, m) - min(a, m)`
    lifted left first is `min(max(7, a + 7 - m), max(m - a, 0))`, whose leaves aren't
    bounded alone; right first, `max(min(7, m - a), min(a + 7 - m, 0))` is at most 7."""
    found = []
    for right_first in (False, True):
        budget = [_MAX_LIFTED_NODES]
        try:
            bound = _bound_of_lifted(_lift(e, budget, right_first))
        except _TooBig:
            continue
        if bound is not None:
            found.append(bound)
    return min(found) if found else None


def _bound_of_lifted(e: n.Expr) -> int | None:
    match e:
        case n.Min(a=a, b=b):
            found = [x for x in (_bound_of_lifted(a), _bound_of_lifted(b)) if x is not None]
            return min(found) if found else None
        case n.Max(a=a, b=b):
            x, y = _bound_of_lifted(a), _bound_of_lifted(b)
            return None if x is None or y is None else max(x, y)
    return _weakened_bound(simplify(e))


_FLIPPED = {n.Min: n.Max, n.Max: n.Min}


def _lift(e: n.Expr, budget: list[int], right_first: bool) -> n.Expr:
    """`e` with no min or max under a sum, a difference or a constant multiple; where
    both operands of one have them, the left operand's outside (or the right one's)."""
    _spend(budget)
    match e:
        case n.Min(a=a, b=b) | n.Max(a=a, b=b):
            return type(e)(_lift(a, budget, right_first), _lift(b, budget, right_first))
        case n.Add(a=a, b=b) | n.Sub(a=a, b=b):
            return _combine(type(e), _lift(a, budget, right_first),
                            _lift(b, budget, right_first), budget, right_first)
        case n.Mul(a=a, b=n.Const(value=c)):
            return _scale(_lift(a, budget, right_first), e.b, c, budget)
    return e


def _combine(op, a: n.Expr, b: n.Expr, budget: list[int], right_first: bool) -> n.Expr:
    """op(a, b) for op Add or Sub, with the mins and maxes of a and b lifted above it."""
    _spend(budget)
    if type(a) in _FLIPPED and not (right_first and type(b) in _FLIPPED):
        return type(a)(_combine(op, a.a, b, budget, right_first),
                       _combine(op, a.b, b, budget, right_first))
    if type(b) in _FLIPPED:
        lifted = type(b) if op is n.Add else _FLIPPED[type(b)]  # x - min(p, q) = max(...)
        return lifted(_combine(op, a, b.a, budget, right_first),
                      _combine(op, a, b.b, budget, right_first))
    return op(a, b)


def _scale(a: n.Expr, factor: n.Const, c, budget: list[int]) -> n.Expr:
    _spend(budget)
    if type(a) in _FLIPPED:
        lifted = type(a) if c >= 0 else _FLIPPED[type(a)]
        return lifted(_scale(a.a, factor, c, budget), _scale(a.b, factor, c, budget))
    return n.Mul(a, factor)


def _limit(xs: list[n.Expr]) -> list[n.Expr]:
    return xs[:_MAX_CANDIDATES]


def _either(xs: list[n.Expr], ys: list[n.Expr]) -> list[n.Expr]:
    """The candidates of both operands of a min (or max), taken in turns, so that the
    limit keeps each operand's first ones (`min(x, 0)` keeps 0 however many x has)."""
    turns = itertools.chain.from_iterable(itertools.zip_longest(xs, ys))
    return _limit([x for x in turns if x is not None])


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
            return _either(_upper(a), _upper(b))
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
            return _either(_lower(a), _lower(b))
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
