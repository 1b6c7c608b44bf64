"""Interval arithmetic over symbolic expressions.

`bounds_of_expr(e, scope)` returns an `Interval` [min, max] (expressions, None where
unbounded) containing every value `e` takes when each variable named in `scope` ranges
over its interval; variables not in `scope` stay symbolic (a Var `v` is the point [v, v]).
Bounds are simplified Exprs of `e`'s type. They follow the simplifier's assumption that
int32/int64 arithmetic doesn't overflow; for types that wrap (unsigned, or narrower than
32 bits) a bound that could have wrapped is replaced by the type's range. Expressions of 16
bits or fewer (and bool) are always bounded, at worst by their type's range.

How each node is bounded:
  * Add, Sub, Min, Max: endpoint-wise. Mul: by a constant, sign-aware; else the min and
    max of the four endpoint products (or `[a.min*b.min, a.max*b.max]` if both are
    provably non-negative); by a bounded operand of known sign, each bounded side of
    the other gives a side.
  * Div (floor): by a constant, sign-aware (x // 0 == 0); by a divisor of provable sign,
    monotonic: each side from one end of a and the extreme end of b (where b is
    unbounded, the limit 0, or -1 for a floor approaching 0 from below); an integer
    by a divisor >= 0 (an array's extent is), [min(a.min, 0), max(a.max, 0)]; by any
    integer, within [-|a|, |a|]. Mod by c > 0:
    [0, c - 1], or the operand's interval when it provably lies in [0, c - 1]; by a
    provably positive b: [0, b.max - 1]; an integer by any b: [min(b.min + 1, 0),
    max(b.max - 1, 0)] (x % 0 == 0), at most a nonnegative a. And (bitwise) with a
    nonnegative operand: [0, that operand's max].
  * Select: the union of both branches, or, where the condition has no variable in
    scope (a specialization's), the select of their bounds. Comparisons and logical
    ops: [false, true] unless constant.
  * Cast: the endpoints cast when that is monotonic and exact (widening, to float, or a
    range provably representable in the target), or monotonic where defined (float to
    int32/int64, undefined out of range as int32 overflow is); else the target type's
    range if 16 bits or fewer, unbounded otherwise. A float that may be NaN cast to an
    integer also takes 0 (NaN casts to 0).
  * Func/input Calls and Loads: their type's range if 16 bits or fewer, else unbounded
    (so `hist[inp[r]]` with a uint8 `inp` is bounded by [0, 255]). Math calls: floor,
    ceil, round, exp, log, sqrt, tanh endpoint-wise, sin and cos in [-1, 1], abs by sign.
  * Let binds the name to its value's interval.
  * Any node whose operands all have point intervals has the point interval of itself.
"""
from __future__ import annotations

import re
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from halo.analysis.simplify import Simplifier, shared_simplifier
from halo.analysis.simplify.cast import represents
from halo.analysis.simplify.pattern import no_overflow
from halo.analysis.simplify.simplifier import is_const_true
from halo.ir import nodes as n
from halo.ir.substitute import free_vars, substitute
from halo.ir.types import Type, bool_, int32


@dataclass(frozen=True)
class Interval:
    """[min, max], both inclusive; None means unbounded on that side."""

    min: n.Expr | None
    max: n.Expr | None

    @classmethod
    def point(cls, e: n.Expr) -> Interval:
        """The interval holding only the value of `e`."""
        return cls(e, e)

    @classmethod
    def everything(cls) -> Interval:
        """The unbounded interval."""
        return cls(None, None)

    @property
    def is_bounded(self) -> bool:
        """Whether both sides are bounded."""
        return self.min is not None and self.max is not None

    @property
    def is_point(self) -> bool:
        """Whether min and max are the same expression (one value)."""
        return self.min is not None and (self.min is self.max or self.min == self.max)

    def union(self, other: Interval) -> Interval:
        """The smallest interval containing both (min of mins, max of maxes), simplified."""
        return IntervalAnalysis(shared_simplifier()).union(self, other)

    def intersect(self, other: Interval) -> Interval:
        """The interval of values in both (max of mins, min of maxes), simplified."""
        return IntervalAnalysis(shared_simplifier()).intersect(self, other)


def bounds_of_expr(e: n.Expr, scope: Mapping[str, Interval]) -> Interval:
    """An interval containing every value of `e` with the variables of `scope` in their
    intervals (see the module docstring)."""
    return IntervalAnalysis(shared_simplifier()).bounds(e, scope)


def type_range(t: Type) -> Interval:
    """All values of an integer or bool type; unbounded for floats."""
    if t.is_float:
        return Interval.everything()
    return Interval(n.const(t.min_value(), t), n.const(t.max_value(), t))


def _is_narrow(t: Type) -> bool:
    return t.is_bool or (not t.is_float and t.bits <= 16)


def _const_value(e: n.Expr | None) -> int | float | None:
    return e.value if isinstance(e, n.Const) else None


def depends_on_scope(e: n.Expr, scope: Mapping[str, Interval]) -> bool:
    """Whether `e` reads a variable that `scope` bounds (one that varies in the walk)."""
    return any(v in scope for v in free_vars(e))


def _may_be_nan(e: n.Expr) -> bool:
    """Whether float `e` may be NaN: anything but a constant or a converted integer."""
    match e:
        case n.Const(value=value):
            return value != value
        case n.Cast(value=value):
            return value.type.is_float
    return True


class IntervalAnalysis:
    """`bounds_of_expr` with one simplifier shared across calls (boxes.py makes many)."""

    def __init__(self, simplifier: Simplifier):
        self.simplifier = simplifier

    def union(self, a: Interval, b: Interval) -> Interval:
        """`Interval.union`, with this analysis's simplifier."""
        return self._simplified(_both(n.Min, a.min, b.min), _both(n.Max, a.max, b.max))

    def intersect(self, a: Interval, b: Interval) -> Interval:
        """`Interval.intersect`, with this analysis's simplifier."""
        return self._simplified(_either(n.Max, a.min, b.min), _either(n.Min, a.max, b.max))

    def bounds(self, e: n.Expr, scope: Mapping[str, Interval]) -> Interval:
        """`bounds_of_expr`, with this analysis's simplifier. `e` is simplified first, so
        that a variable occurring twice cancels where it can: m + (e - m) is e, not the
        looser interval of the sum."""
        return self._of(self.simplifier.expr(e), scope)

    def _of(self, e: n.Expr, scope: Mapping[str, Interval]) -> Interval:
        """The interval of a subexpression, filled with the type's range if narrow."""
        iv = self._bounds(e, scope)
        if _is_narrow(e.type) and not iv.is_bounded:
            full = type_range(e.type)
            iv = Interval(full.min if iv.min is None else iv.min,
                          full.max if iv.max is None else iv.max)
        return iv

    # ---------------------------------------------------------------------------- helpers

    def _simplified(self, lo: n.Expr | None, hi: n.Expr | None) -> Interval:
        s = self.simplifier.expr
        return Interval(None if lo is None else s(lo), None if hi is None else s(hi))

    def _proves(self, cond: n.Expr) -> bool:
        return is_const_true(self.simplifier.expr(cond))

    def _nonnegative(self, e: n.Expr | None) -> bool:
        if e is None:
            return False
        # An array's extent (`inp.shape[0]`, the Var `inp.extent.0`) is never negative.
        extents = {v: n.Max(n.Var(v, e.type), n.const(0, e.type)) for v in free_vars(e)
                   if _EXTENT.fullmatch(v)} if e.type == int32 else {}
        return self._proves(n.LE(n.const(0, e.type), substitute(e, extents) if extents else e))

    def _positive(self, e: n.Expr | None) -> bool:
        return e is not None and self._proves(n.LT(n.const(0, e.type), e))

    def _negative(self, e: n.Expr | None) -> bool:
        return e is not None and self._proves(n.LT(e, n.const(0, e.type)))

    @staticmethod
    def _apply(f: Callable[[n.Expr], n.Expr], e: n.Expr | None) -> n.Expr | None:
        return None if e is None else f(e)

    # --------------------------------------------------------------------------- by node

    def _bounds(self, e: n.Expr, scope: Mapping[str, Interval]) -> Interval:
        match e:
            case n.Const():
                return Interval.point(e)
            case n.Var(name=name):
                return scope.get(name, Interval.point(e))
            case n.Let(name=name, value=value, body=body):
                inner = ChainMap({name: self._of(value, scope)}, scope)
                return self._of(body, inner)
            case n.Call(name="promise_clamped", args=(value, lo, hi, *guarded)):
                v = self._of(value, scope)
                promised = Interval(self._of(lo, scope).min, self._of(hi, scope).max)
                if v.is_point and promised.is_bounded:
                    # Keep the promise in the result, so relaxing it later (over a loop)
                    # still finds both bounds.
                    return Interval.point(n.promise_clamped(v.min, promised.min,
                                                            promised.max, bool(guarded)))
                return self.intersect(v, promised)
            case n.Call(kind=kind) if kind is not n.CallKind.MATH:
                return type_range(e.type) if _is_narrow(e.type) else Interval.everything()
            case n.Load():
                return type_range(e.type) if _is_narrow(e.type) else Interval.everything()
        if e.type.is_bool:
            simplified = self.simplifier.expr(e)
            if isinstance(simplified, n.Const):
                return Interval.point(simplified)
            return type_range(bool_.with_lanes(e.type.lanes))
        if isinstance(e, n.Select):
            return self._select(e, scope)
        kids = self._operand_intervals(e, scope)
        if all(iv.is_point for iv in kids):
            return Interval.point(self.simplifier.expr(_with_operands(e, [iv.min for iv in kids])))
        if e.type.is_integer and not no_overflow(e.type) and _may_wrap(e, kids):
            return _exact_or_type_range(e, kids)
        match e:
            case n.Add():
                a, b = kids
                return self._simplified(_both(n.Add, a.min, b.min), _both(n.Add, a.max, b.max))
            case n.Sub():
                a, b = kids
                return self._simplified(_both(n.Sub, a.min, b.max), _both(n.Sub, a.max, b.min))
            case n.Mul():
                return self._mul(e, *kids)
            case n.Div():
                return self._div(e, *kids)
            case n.Mod():
                return self._mod(e, *kids)
            case n.Min():
                a, b = kids
                return self._simplified(_both(n.Min, a.min, b.min), _either(n.Min, a.max, b.max))
            case n.Max():
                a, b = kids
                return self._simplified(_either(n.Max, a.min, b.min), _both(n.Max, a.max, b.max))
            case n.Cast():
                return self._cast(e, kids[0])
            case n.And() if e.type.is_integer:
                return self._and(e, *kids)
            case n.Call(name=name):
                return self._math(e, name, kids)
        return Interval.everything()

    def _operand_intervals(self, e: n.Expr, scope: Mapping[str, Interval]) -> list[Interval]:
        match e:
            case n.BinaryOp():
                return [self._of(e.a, scope), self._of(e.b, scope)]
            case n.Not():
                return [self._of(e.a, scope)]
            case n.Cast():
                return [self._of(e.value, scope)]
            case n.Call():
                return [self._of(a, scope) for a in e.args]
        raise TypeError(f"no interval rule for {type(e).__name__}")

    def _select(self, e: n.Select, scope: Mapping[str, Interval]) -> Interval:
        cond = self.simplifier.expr(e.condition)
        if isinstance(cond, n.Const):
            return self._of(e.true_value if cond.value else e.false_value, scope)
        a, b = self._of(e.true_value, scope), self._of(e.false_value, scope)
        if cond.type.lanes == 1 and not depends_on_scope(cond, scope):
            return self.select(cond, a, b)
        return self.union(a, b)

    def select(self, cond: n.Expr, a: Interval, b: Interval) -> Interval:
        """The bounds of a value that is in `a` where `cond` holds and in `b` elsewhere,
        for a `cond` that is one value throughout the scope (a specialization's: see
        `depends_on_scope`): the bounds of the branch taken, rather than a union that
        lets the other widen them. An unbounded side stays unbounded."""
        def choose(x: n.Expr | None, y: n.Expr | None) -> n.Expr | None:
            return None if x is None or y is None else n.Select(cond, x, y)
        return self._simplified(choose(a.min, b.min), choose(a.max, b.max))

    def _mul(self, e: n.Expr, a: Interval, b: Interval) -> Interval:
        if b.is_point and isinstance(b.min, n.Const):
            return self._scale(a, b.min)
        if a.is_point and isinstance(a.min, n.Const):
            return self._scale(b, a.min)
        if not (a.is_bounded and b.is_bounded):
            return self._mul_half_bounded(a, b)
        if self._nonnegative(a.min) and self._nonnegative(b.min):
            return self._simplified(n.Mul(a.min, b.min), n.Mul(a.max, b.max))
        products = [n.Mul(p, q) for p in (a.min, a.max) for q in (b.min, b.max)]
        lo = n.Min(n.Min(products[0], products[1]), n.Min(products[2], products[3]))
        hi = n.Max(n.Max(products[0], products[1]), n.Max(products[2], products[3]))
        return self._simplified(lo, hi)

    def _mul_half_bounded(self, a: Interval, b: Interval) -> Interval:
        """A product where one operand is bounded and of known sign, the other bounded on
        one side only: monotonic in the other operand, so its bounded side bounds one
        side of the product (`(x % 2) * min(y, 13)` is at most 13, as the simplifier's
        constant bounds know)."""
        for p, q in ((a, b), (b, a)):
            if not p.is_bounded:
                continue

            def lowest(m: n.Expr, p: Interval = p) -> n.Expr:
                return n.Min(n.Mul(p.min, m), n.Mul(p.max, m))

            def highest(m: n.Expr, p: Interval = p) -> n.Expr:
                return n.Max(n.Mul(p.min, m), n.Mul(p.max, m))
            if self._nonnegative(p.min):
                return self._simplified(self._apply(lowest, q.min), self._apply(highest, q.max))
            if self._nonnegative(n.Sub(n.const(0, p.max.type), p.max)):
                return self._simplified(self._apply(lowest, q.max), self._apply(highest, q.min))
        return Interval.everything()

    def _scale(self, a: Interval, c: n.Const) -> Interval:
        def times(x: n.Expr) -> n.Expr:
            return n.Mul(x, c)
        if c.value > 0:
            return self._simplified(self._apply(times, a.min), self._apply(times, a.max))
        if c.value < 0:
            return self._simplified(self._apply(times, a.max), self._apply(times, a.min))
        if c.value == 0 and (c.type.is_integer or a.is_bounded):
            return Interval.point(c)
        return Interval.everything()

    def _div(self, e: n.Expr, a: Interval, b: Interval) -> Interval:
        if b.is_point and isinstance(b.min, n.Const):
            c = b.min

            def over(x: n.Expr) -> n.Expr:
                return n.Div(x, c)
            if c.value > 0:
                return self._simplified(self._apply(over, a.min), self._apply(over, a.max))
            if c.value < 0:
                return self._simplified(self._apply(over, a.max), self._apply(over, a.min))
            if e.type.is_integer:
                return Interval.point(n.const(0, e.type))
            return Interval.everything()
        if b.is_point and e.type.is_integer:
            # One divisor of unknown value: a // b is monotonic in a, one way or the
            # other (a // 0 == 0 at both ends), so the ends of a give the ends of a // b.
            # A fused loop's `gc // C` over [0, G * C - 1] stays below G, not G * C.
            def by(x: n.Expr) -> n.Expr:
                return n.Div(x, b.min)
            low, high = self._apply(by, a.min), self._apply(by, a.max)
            if self._nonnegative(b.min):
                return self._simplified(low, high)
            if self._nonnegative(n.Sub(n.const(0, e.type), b.min)):
                return self._simplified(high, low)
            if a.is_bounded:
                return self._simplified(n.Min(low, high), n.Max(low, high))
        if self._positive(b.min) or self._negative(b.max):
            return self._div_by_signed(e, a, b, self._positive(b.min))
        if not e.type.is_integer:
            return Interval.everything()
        zero = n.const(0, e.type)
        if self._nonnegative(b.min):
            # b >= 1 moves a toward zero (floor: -1 // 5 == -1), and a // 0 == 0.
            return self._simplified(self._apply(lambda x: n.Min(x, zero), a.min),
                                    self._apply(lambda x: n.Max(x, zero), a.max))
        if a.is_bounded:  # either sign: |a // b| <= |a|
            return self._simplified(n.Min(n.Min(a.min, n.Sub(zero, a.max)), zero),
                                    n.Max(n.Max(a.max, n.Sub(zero, a.min)), zero))
        return Interval.everything()

    def _div_by_signed(self, e: n.Expr, a: Interval, b: Interval,
                       positive: bool) -> Interval:
        """a // b for a divisor of known sign: monotonic in a (growing for b > 0), so
        each side comes from one end of a, at whichever end of b is extreme. Where b is
        unbounded, the quotient tends to 0 (floor: -1 when the end of a has the sign
        opposite to b's): `max(x, 3) // min(y, -1)` is at most -1, as the simplifier's
        constant bounds know."""
        zero = n.const(0, e.type)

        def limit(x: n.Expr, upper: bool) -> n.Expr:
            if e.type.is_float:
                return zero
            opposite = self._negative(x) if positive else self._positive(x)
            same = self._nonnegative(x if positive else n.Sub(zero, x))
            return n.const(-1, e.type) if opposite or not (upper or same) else zero

        def extreme(x: n.Expr | None, upper: bool) -> n.Expr | None:
            if x is None:
                return None
            q = [limit(x, upper) if m is None else n.Div(x, m) for m in (b.min, b.max)]
            return (n.Max if upper else n.Min)(q[0], q[1])
        if positive:
            return self._simplified(extreme(a.min, False), extreme(a.max, True))
        return self._simplified(extreme(a.max, False), extreme(a.min, True))

    def _mod(self, e: n.Expr, a: Interval, b: Interval) -> Interval:
        t = e.type
        zero = n.const(0, t)
        if b.is_point and isinstance(b.min, n.Const):
            c = b.min
            if c.value > 0:
                if (a.is_bounded and self._nonnegative(a.min)
                        and self._proves(n.LT(a.max, c))):
                    return a
                return Interval(zero, c if t.is_float else n.const(c.value - 1, t))
            if c.value < 0:
                return Interval(c if t.is_float else n.const(c.value + 1, t), zero)
            return Interval.point(zero) if t.is_integer else Interval.everything()
        if b.max is not None and self._positive(b.min):
            return self._simplified(zero, b.max if t.is_float else n.Sub(b.max, n.const(1, t)))
        if b.min is not None and self._negative(b.max):
            return self._simplified(b.min if t.is_float else n.Add(b.min, n.const(1, t)), zero)
        if t.is_float:
            return Interval.everything()
        # Between 0 and the divisor, whatever its sign (x % 0 == 0); no larger than a
        # nonnegative x. The simplifier knows this (const_bounds.py) and drops a clamp
        # it makes redundant, so the interval must keep it.
        one = n.const(1, t)
        lo = zero if self._nonnegative(b.min) else \
            self._apply(lambda m: n.Min(n.Add(m, one), zero), b.min)
        hi = self._apply(lambda m: n.Max(n.Sub(m, one), zero), b.max)
        if self._nonnegative(a.min) and self._nonnegative(b.min):
            hi = _either(n.Min, hi, a.max)
        return self._simplified(lo, hi)

    def _and(self, e: n.Expr, a: Interval, b: Interval) -> Interval:
        """Bitwise and: with a nonnegative operand, in [0, that operand's max] (as
        const_bounds.py knows, so the interval keeps a clamp the simplifier drops)."""
        ends = [iv.max for iv in (a, b) if self._nonnegative(iv.min)]
        if not ends:
            return Interval.everything()
        hi = ends[0] if len(ends) == 1 else _either(n.Min, *ends)
        return self._simplified(n.const(0, e.type), hi)

    def _cast(self, e: n.Cast, a: Interval) -> Interval:
        t, source = e.type, e.value.type

        def cast(x: n.Expr) -> n.Expr:
            return n.Cast(t, x)
        if t.is_float or represents(t, source):
            # Exact or rounding conversions are monotonic.
            return self._simplified(self._apply(cast, a.min), self._apply(cast, a.max))
        # Otherwise the cast is monotonic (and exact, for integers) only on t's range.
        lowest, highest = _representable_range(t, source)
        low_ok = source.min_value() >= t.min_value() or (
            a.min is not None and self._proves(n.LE(lowest, a.min)))
        high_ok = source.max_value() <= t.max_value() or (
            a.max is not None and self._proves(n.LE(a.max, highest)))
        if a.is_bounded and low_ok and high_ok:
            if source.is_float and _may_be_nan(e.value):  # NaN casts to 0 (nodes.py)
                zero = n.const(0, source)
                return self._simplified(cast(n.Min(a.min, zero)), cast(n.Max(a.max, zero)))
            return self._simplified(cast(a.min), cast(a.max))
        if source.is_float and no_overflow(t):
            # Truncation is monotonic wherever it is defined: a float outside t's range
            # converts to an undefined value, assumed away for a symbolic bound as int32
            # overflow is (`int32(floor(y * 0.5))` is bounded); a constant one outside
            # the range leaves that side unbounded.
            nan = _may_be_nan(e.value)  # NaN casts to 0 (nodes.py)

            def end(x: n.Expr | None, ok: bool, widen: type) -> n.Expr | None:
                if x is None or (isinstance(x, n.Const) and not ok):
                    return None
                return cast(widen(x, n.const(0, source)) if nan else x)
            return self._simplified(end(a.min, low_ok, n.Min), end(a.max, high_ok, n.Max))
        # A 32-bit range bounds no index usefully: such a cast is unbounded (bounds
        # inference then asks for a clamp instead of allocating 2**32 points).
        return type_range(t) if _is_narrow(t) else Interval.everything()

    def _math(self, e: n.Call, name: str, kids: list[Interval]) -> Interval:
        t = e.type

        def call(x: n.Expr) -> n.Expr:
            return n.Call(t, name, (x,), n.CallKind.MATH)
        if len(kids) != 1:
            return Interval.everything()
        a = kids[0]
        if name in ("floor", "ceil", "round"):
            return self._simplified(self._apply(call, a.min), self._apply(call, a.max))
        if name in ("sin", "cos"):
            return Interval(n.const(-1, t), n.const(1, t))
        if name == "tanh":
            lo = n.const(-1, t) if a.min is None else call(a.min)
            hi = n.const(1, t) if a.max is None else call(a.max)
            return self._simplified(lo, hi)
        if name == "exp":
            return self._simplified(n.const(0, t) if a.min is None else call(a.min),
                                    self._apply(call, a.max))
        if name == "log":
            return self._simplified(call(a.min) if self._positive(a.min) else None,
                                    self._apply(call, a.max))
        if name == "sqrt":
            lo = call(a.min) if self._nonnegative(a.min) else n.const(0, t)
            return self._simplified(lo, self._apply(call, a.max))
        if name == "abs":
            if self._nonnegative(a.min):
                return a
            zero = n.const(0, t)
            if self._nonnegative(self._apply(lambda x: n.Sub(zero, x), a.max)):
                return self._simplified(n.Sub(zero, a.max), n.Sub(zero, a.min))
            if a.is_bounded:
                return self._simplified(zero, n.Max(call(a.min), call(a.max)))
            return Interval(zero, None)
        return Interval.everything()


_EXTENT = re.compile(r".+\.extent\.\d+")
"""The name of an array's extent, which the runtime binds (never negative)."""


def _representable_range(t: Type, source: Type) -> tuple[n.Const, n.Const]:
    """The part of t's range that `source` can hold, as constants of type `source`, rounded
    inward for a float source (int32's maximum is not a float32, and the float32 above it
    overflows int32)."""
    lo = np.asarray(max(t.min_value(), source.min_value()), source.numpy)
    hi = np.asarray(min(t.max_value(), source.max_value()), source.numpy)
    if float(lo) < t.min_value():
        lo = np.nextafter(lo, np.inf, dtype=source.numpy)
    if float(hi) > t.max_value():
        hi = np.nextafter(hi, -np.inf, dtype=source.numpy)
    return n.const(lo.item(), source), n.const(hi.item(), source)


def _both(op: type, a: n.Expr | None, b: n.Expr | None) -> n.Expr | None:
    """op(a, b), unbounded if either side is."""
    return None if a is None or b is None else op(a, b)


def _either(op: type, a: n.Expr | None, b: n.Expr | None) -> n.Expr | None:
    """op(a, b) where an unbounded side doesn't constrain (the max of mins of a Max, ...)."""
    if a is None:
        return b
    if b is None:
        return a
    return op(a, b)


def _with_operands(e: n.Expr, ops: list[n.Expr]) -> n.Expr:
    match e:
        case n.BinaryOp():
            return type(e)(ops[0], ops[1])
        case n.Not():
            return n.Not(ops[0])
        case n.Cast():
            return n.Cast(e.type, ops[0])
        case n.Call():
            return n.Call(e.type, e.name, tuple(ops), e.kind)
    raise TypeError(f"no operands to replace in {type(e).__name__}")


_WRAPPING_OPS = (n.Add, n.Sub, n.Mul, n.Not)


def _may_wrap(e: n.Expr, kids: list[Interval]) -> bool:
    """Whether bounding `e` endpoint-wise could produce a wrapped (wrong) bound."""
    if isinstance(e, _WRAPPING_OPS):
        return True
    if isinstance(e, n.Div):
        return not (isinstance(kids[1].min, n.Const) and kids[1].is_point
                    and kids[1].min.value != -1)
    return isinstance(e, n.Call) and e.name == "abs"


_EXACT_OPS = {
    n.Add: lambda a, b: a + b,
    n.Sub: lambda a, b: a - b,
    n.Mul: lambda a, b: a * b,
    n.Div: lambda a, b: a // b if b else 0,
}


def _exact_or_type_range(e: n.Expr, kids: list[Interval]) -> Interval:
    """For a type that wraps: exact constant bounds from constant operand bounds when the
    result can't have wrapped, else the type's range."""
    t = e.type
    op = _EXACT_OPS.get(type(e))
    ends = [[_const_value(iv.min), _const_value(iv.max)] for iv in kids]
    if op is None or any(v is None for pair in ends for v in pair):
        return type_range(t)
    (alo, ahi), (blo, bhi) = ends
    if isinstance(e, n.Div) and blo <= 0 <= bhi:
        return type_range(t)
    corners = [op(p, q) for p in (alo, ahi) for q in (blo, bhi)]
    lo, hi = min(corners), max(corners)
    if lo < t.min_value() or hi > t.max_value():
        return type_range(t)
    return Interval(n.const(lo, t), n.const(hi, t))
