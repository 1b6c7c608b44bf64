"""Constant bounds of integer and bool expressions, valid under wraparound.

`ConstBounds(scope).of(e)` returns `(lo, hi)` such that every value `e` takes while its
variables lie in their `scope` ranges is in [lo, hi] (None for float expressions). Each
bound is computed exactly and kept only when the whole exact range fits in the type, so
that no wraparound can have happened; otherwise the type's own range is returned. This
makes the bounds sound for every integer type with no assumption about overflow. The
simplifier uses them to decide comparisons, mins and maxes, and `x % c` or `x // c` on
small ranges, e.g. of loop variables or of `int32(u8)`.
"""
from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from halo.ir import nodes as n
from halo.ir.types import Type

Bounds = tuple[int, int]


@cache  # asked for at every node; NumPy's iinfo is slow to build
def type_bounds(t: Type) -> Bounds:
    """The range of an integer or bool type."""
    return int(t.min_value()), int(t.max_value())


def _fit(lo: int, hi: int, t: Type) -> Bounds:
    """[lo, hi] if it lies inside `t`'s range, else `t`'s range."""
    tlo, thi = type_bounds(t)
    return (lo, hi) if tlo <= lo and hi <= thi else (tlo, thi)


class ConstBounds:
    """Constant bounds of expressions, with the variables of `scope` in their ranges."""

    def __init__(self, scope: Mapping[str, Bounds]):
        self.scope = scope
        self._memo: dict[int, tuple[n.Expr, Bounds]] = {}

    def of(self, e: n.Expr) -> Bounds | None:
        """Bounds of `e`, or None if `e` is a float expression."""
        if e.type.is_float:
            return None
        hit = self._memo.get(id(e))
        if hit is not None:
            return hit[1]
        result = self._compute(e, e.type)
        self._memo[id(e)] = (e, result)
        return result

    def _compute(self, e: n.Expr, t: Type) -> Bounds:
        match e:
            case n.Const(value=v):
                return v, v
            case n.Var(name=name) if name in self.scope:
                (lo, hi), (tlo, thi) = self.scope[name], type_bounds(t)
                return max(lo, tlo), min(hi, thi)
            case n.Cast(value=v) if not v.type.is_float:
                return _fit(*self.of(v), t)
            case n.Add(a=a, b=b):
                (alo, ahi), (blo, bhi) = self.of(a), self.of(b)
                return _fit(alo + blo, ahi + bhi, t)
            case n.Sub(a=a, b=b):
                (alo, ahi), (blo, bhi) = self.of(a), self.of(b)
                return _fit(alo - bhi, ahi - blo, t)
            case n.Mul(a=a, b=b):
                (alo, ahi), (blo, bhi) = self.of(a), self.of(b)
                products = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
                return _fit(min(products), max(products), t)
            case n.Div(a=a, b=b):
                return _fit(*_div(self.of(a), self.of(b)), t)
            case n.Mod(a=a, b=b):
                return _mod(self.of(a), self.of(b))
            case n.Min(a=a, b=b):
                (alo, ahi), (blo, bhi) = self.of(a), self.of(b)
                return min(alo, blo), min(ahi, bhi)
            case n.Max(a=a, b=b):
                (alo, ahi), (blo, bhi) = self.of(a), self.of(b)
                return max(alo, blo), max(ahi, bhi)
            case n.Select(true_value=a, false_value=b):
                (alo, ahi), (blo, bhi) = self.of(a), self.of(b)
                return min(alo, blo), max(ahi, bhi)
            case n.And(a=a, b=b) if t.is_integer:
                (alo, ahi), (blo, bhi) = self.of(a), self.of(b)
                if alo >= 0 and blo >= 0:
                    return 0, min(ahi, bhi)
        return type_bounds(t)


def _div(a: Bounds, b: Bounds) -> Bounds:
    (alo, ahi), (blo, bhi) = a, b
    if blo > 0 or bhi < 0:
        # For a divisor of fixed sign, floor division is monotonic in each operand.
        corners = [alo // blo, alo // bhi, ahi // blo, ahi // bhi]
        return min(corners), max(corners)
    # The divisor may be 0 (giving 0) or of either sign, and |a // b| <= |a|.
    m = max(abs(alo), abs(ahi))
    return -m, m


def _mod(a: Bounds, b: Bounds) -> Bounds:
    (alo, ahi), (blo, bhi) = a, b
    if blo == bhi != 0 and alo // blo == ahi // blo:
        return alo % blo, ahi % blo
    if blo > 0:
        return 0, (min(ahi, bhi - 1) if alo >= 0 else bhi - 1)
    if bhi < 0:
        return blo + 1, 0
    # Floor modulo lies between 0 and the divisor (x % 0 == 0).
    return min(blo + 1, 0), max(bhi - 1, 0)
