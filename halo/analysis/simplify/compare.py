"""Rules for comparisons (EQ, NE, LT, LE), the logical/bitwise And, Or, Xor, Not, and Select.

`a > b` and `a >= b` are built as `LT(b, a)` and `LE(b, a)`. Comparisons of integers are
decided from constant bounds (exact for every type) and, for int32/int64, from the linear
form of `a - b`, which also gives the canonical form `P < N + k`: positive terms on the
left, subtracted terms and the constant on the right, coefficients divided by their gcd.
EQ/NE of integers compare linear forms modulo 2**bits, which is exact for every type.
For floats nothing beyond x < x -> false is decided (NaN makes x <= x and x == x false, and
not (x < y) is not y <= x). A Select with a constant condition is folded before these
rules run.
"""
from __future__ import annotations

from halo.analysis.simplify.linear import LinearForm
from halo.analysis.simplify.pattern import (
    ANY,
    BOOL,
    FALSE,
    INT,
    NO_OVERFLOW,
    TRUE,
    Analysis,
    Rule,
    c1,
    c2,
    eq,
    fits,
    max_,
    min_,
    ne,
    no_overflow,
    select,
    w,
    x,
    y,
    z,
)
from halo.ir import nodes as n


def _is_integer(x: n.Expr) -> bool:
    return x.type.is_integer


def _decide_by_bounds(e: n.Expr, ctx: Analysis) -> n.Expr | None:
    """Compare the constant ranges of both sides."""
    (alo, ahi), (blo, bhi) = ctx.bounds(e.a), ctx.bounds(e.b)
    if isinstance(e, (n.LT, n.LE)):
        strict = isinstance(e, n.LT)
        always = ahi < blo if strict else ahi <= blo
        never = alo >= bhi if strict else alo > bhi
    else:
        always = alo == ahi == blo == bhi  # both sides the same constant
        never = ahi < blo or bhi < alo  # disjoint ranges
        if isinstance(e, n.NE):
            always, never = never, always
    if always:
        return n.const(True, e.type)
    if never:
        return n.const(False, e.type)
    return None


def _order_linear(e: n.Expr, ctx: Analysis) -> n.Expr | None:
    """Decide or canonicalize a < b (or a <= b) through the linear form d = a - b."""
    strict = isinstance(e, n.LT)
    t = e.a.type
    d = ctx.linear(e.a).minus(ctx.linear(e.b))
    lo, hi = ctx.form_bounds(d)
    if (hi < 0) if strict else (hi <= 0):
        return n.const(True, e.type)
    if (lo >= 0) if strict else (lo > 0):
        return n.const(False, e.type)
    # d = g*m + c: d < 0  <=>  m < ceil(-c / g);  d <= 0  <=>  m <= floor(-c / g).
    g = d.coefficient_gcd()
    m = LinearForm({a: k // g for a, k in d.terms.items()}, 0)
    k = -(d.constant // g) if strict else (-d.constant) // g
    if not (fits(k, t) and fits(-k, t)):
        return None
    left, right = m.sides()
    op = n.LT if strict else n.LE
    if not left.terms:
        return op(n.const(-k, t), right.to_expr(t))
    return op(left.to_expr(t), LinearForm(right.terms, k).to_expr(t))


def _lane_extremes(e: n.Expr, ctx: Analysis) -> tuple[LinearForm, LinearForm] | None:
    """Linear forms of the lowest and highest lane of a ramp of constant stride or of a
    broadcast; None for other vectors."""
    if isinstance(e, n.Broadcast):
        value = ctx.linear(e.value)
        return value, value
    if isinstance(e, n.Ramp) and isinstance(e.stride, n.Const):
        base, span = ctx.linear(e.base), e.stride.value * (e.lanes - 1)
        return (LinearForm(base.terms, base.constant + min(span, 0)),
                LinearForm(base.terms, base.constant + max(span, 0)))
    return None


def _vector_order(e: n.Expr, ctx: Analysis) -> n.Expr | None:
    """Decide a < b (or a <= b) of ramps and broadcasts when every lane compares alike:
    a tail mask ramp(x, 1, 16) < broadcast(x + 48, 16) is all true."""
    if e.a.type.lanes == 1:
        return None
    a, b = _lane_extremes(e.a, ctx), _lane_extremes(e.b, ctx)
    if a is None or b is None:
        return None
    strict = isinstance(e, n.LT)
    _, highest = ctx.form_bounds(a[1].minus(b[0]))  # the largest a - b of any two lanes
    lowest, _ = ctx.form_bounds(a[0].minus(b[1]))  # the smallest
    if (highest < 0) if strict else (highest <= 0):
        return n.Broadcast(n.const(True, e.type.element_of()), e.type.lanes)
    if (lowest >= 0) if strict else (lowest > 0):
        return n.Broadcast(n.const(False, e.type.element_of()), e.type.lanes)
    return None


def _equality_linear(e: n.Expr, ctx: Analysis) -> n.Expr | None:
    """Decide or canonicalize a == b (or a != b) through a - b modulo 2**bits."""
    t = e.a.type
    exact = ctx.linear(e.a).minus(ctx.linear(e.b))
    d = exact.wrapped(t)
    is_eq = isinstance(e, n.EQ)
    if d.is_constant:
        return n.const((d.constant == 0) == is_eq, e.type)
    if no_overflow(t):
        lo, hi = ctx.form_bounds(exact)
        if lo > 0 or hi < 0:
            return n.const(not is_eq, e.type)
    left, right = d.sides()
    left = LinearForm(left.terms, 0)
    op = n.EQ if is_eq else n.NE
    if not left.terms:
        return op(right.to_expr(t), n.const(d.constant, t))
    return op(left.to_expr(t), LinearForm(right.terms, -d.constant).to_expr(t))


RULES = [
    Rule(x < x, FALSE, ANY),                          # x < x -> false
    Rule(x < y, _decide_by_bounds, INT),              # int32(u8) < 256 -> true
    Rule(x < y, _vector_order, NO_OVERFLOW),          # ramp(x, 1, 4) < broadcast(x + 9) -> true
    Rule(x < y, _order_linear, NO_OVERFLOW),          # x + 1 < x + 3 -> true, x + 3 < 10 -> x < 7
    Rule(x <= x, TRUE, INT),                          # x <= x -> true
    Rule(x <= y, _decide_by_bounds, INT),             # int32(u8) <= 255 -> true
    Rule(x <= y, _vector_order, NO_OVERFLOW),         # broadcast(x) <= ramp(x, 2, 8) -> true
    Rule(x <= y, _order_linear, NO_OVERFLOW),         # x*2 <= y*2 + 3 -> x <= y + 1
    Rule(eq(x, x), TRUE, INT),                        # x == x -> true
    Rule(eq(x, y), _decide_by_bounds, INT),           # int32(u8) == -1 -> false
    Rule(eq(x, y), _equality_linear, INT),            # x + 1 == y + 1 -> x == y
    Rule(eq(x, TRUE), x, BOOL),                       # x == true -> x
    Rule(eq(x, FALSE), ~x, BOOL),                     # x == false -> not x
    Rule(ne(x, x), FALSE, INT),                       # x != x -> false
    Rule(ne(x, y), _decide_by_bounds, INT),           # int32(u8) != -1 -> true
    Rule(ne(x, y), _equality_linear, INT),            # x + 1 != x -> true
    Rule(ne(x, TRUE), ~x, BOOL),                      # x != true -> not x
    Rule(ne(x, FALSE), x, BOOL),                      # x != false -> x

    Rule(~~x, x, ANY),                                # not not x -> x, ~~x -> x
    Rule(~(x < y), y <= x, ANY, when=_is_integer),    # not (x < y) -> y <= x
    Rule(~(x <= y), y < x, ANY, when=_is_integer),    # not (x <= y) -> y < x
    Rule(~eq(x, y), ne(x, y), ANY),                   # not (x == y) -> x != y
    Rule(~ne(x, y), eq(x, y), ANY),                   # not (x != y) -> x == y

    Rule(x & 0, 0, ANY),                              # x and false -> false, x & 0 -> 0
    Rule(x & x, x, ANY),                              # x and x -> x
    Rule(x & TRUE, x, BOOL),                          # x and true -> x
    Rule(x & ~x, FALSE, BOOL),                        # x and not x -> false
    Rule((x < c1) & (x < c2), x < min_(c1, c2), ANY),     # x < 3 and x < 5 -> x < 3
    Rule((c1 < x) & (c2 < x), max_(c1, c2) < x, ANY),     # 3 < x and 5 < x -> 5 < x
    Rule((x <= c1) & (x <= c2), x <= min_(c1, c2), ANY),  # x <= 3 and x <= 5 -> x <= 3
    Rule((c1 <= x) & (c2 <= x), max_(c1, c2) <= x, ANY),  # 3 <= x and 5 <= x -> 5 <= x
    Rule((x < c1) & (c2 < x), FALSE, ANY,                 # x < 3 and 2 < x -> false
         when=lambda x, c1, c2: x.type.is_integer and c1.value <= c2.value + 1),
    Rule((x <= c1) & (c2 <= x), FALSE, ANY,               # x <= 2 and 3 <= x -> false
         when=lambda c1, c2: c1.value < c2.value),

    Rule(x | 0, x, ANY),                              # x or false -> x, x | 0 -> x
    Rule(x | x, x, ANY),                              # x or x -> x
    Rule(x | TRUE, TRUE, BOOL),                       # x or true -> true
    Rule(x | ~x, TRUE, BOOL),                         # x or not x -> true
    Rule((x < c1) | (x < c2), x < max_(c1, c2), ANY),     # x < 3 or x < 5 -> x < 5
    Rule((c1 < x) | (c2 < x), min_(c1, c2) < x, ANY),     # 3 < x or 5 < x -> 3 < x
    Rule((x <= c1) | (x <= c2), x <= max_(c1, c2), ANY),  # x <= 3 or x <= 5 -> x <= 5
    Rule((c1 <= x) | (c2 <= x), min_(c1, c2) <= x, ANY),  # 3 <= x or 5 <= x -> 3 <= x

    Rule(x ^ 0, x, ANY),                              # x xor false -> x, x ^ 0 -> x
    Rule(x ^ x, 0, ANY),                              # x xor x -> false, x ^ x -> 0
    Rule(x ^ TRUE, ~x, BOOL),                         # x xor true -> not x

    Rule(select(z, x, x), x, ANY),                    # select(c, x, x) -> x
    Rule(select(~z, x, y), select(z, y, x), ANY),     # select(not c, x, y) -> select(c, y, x)
    Rule(select(z, TRUE, FALSE), z, BOOL),            # select(c, true, false) -> c
    Rule(select(z, FALSE, TRUE), ~z, BOOL),           # select(c, false, true) -> not c
    Rule(select(z, select(z, x, y), w), select(z, x, w), ANY),  # inner select on c takes x
    Rule(select(z, w, select(z, x, y)), select(z, w, y), ANY),  # inner select on c takes y
    Rule(select(x < y, x, y), min_(x, y), INT),       # select(x < y, x, y) -> min(x, y)
    Rule(select(x < y, y, x), max_(x, y), INT),       # select(x < y, y, x) -> max(x, y)
    Rule(select(x <= y, x, y), min_(x, y), INT),      # select(x <= y, x, y) -> min(x, y)
    Rule(select(x <= y, y, x), max_(x, y), INT),      # select(x <= y, y, x) -> max(x, y)
]
