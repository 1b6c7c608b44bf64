"""Rules for Add, Sub, Mul, Div and Mod.

Integer Add, Sub and Mul all go through one rule: the expression is read as a linear form
(linear.py) and rebuilt canonically, which covers x + 0, x * 0, x - x, c + x -> x + c,
x - c -> x + (-c), (x + c1) + c2, (x + y) - x, x*c1*c2, (x + 1)*4, (x // 4)*4 + x % 4 and
every reassociation of those. Float rules are only those exact in IEEE arithmetic (no
x + 0.0 -> x, since -0.0 + 0.0 is +0.0; no x * 0.0 -> 0.0, because of NaN and inf).

Division and modulo are floor division and floor modulo, with x // 0 == x % 0 == 0.
"""
from __future__ import annotations

from math import gcd

from halo.analysis.simplify.linear import LinearForm
from halo.analysis.simplify.pattern import (
    FLOAT,
    INT,
    NO_OVERFLOW,
    Analysis,
    Rule,
    c1,
    c2,
    fits,
    x,
    y,
)
from halo.ir import nodes as n
from halo.ir.types import Type


def _normalize(e: n.Expr, ctx: Analysis) -> n.Expr:
    """The canonical rebuild of an integer Add, Sub or Mul from its linear form."""
    return ctx.recombine_div_mod(ctx.linear(e)).to_expr(e.type)


def _absorb_min_max(e: n.Expr, t: Type, ctx: Analysis) -> n.Expr | None:
    """k*op(a, b) == k*a + k*op(b - a, 0) for op min or max, applied where the k*a taken
    out cancels terms outside: x - max(x, y) == min(x - y, 0). The number of terms strictly
    drops, so this cannot cycle."""
    form = ctx.linear(e)
    for atom, k in form.terms.items():
        m = atom.expr
        if not isinstance(m, (n.Min, n.Max)):
            continue
        rest = LinearForm({a: c for a, c in form.terms.items() if a != atom}, form.constant)
        for a, b in ((m.a, m.b), (m.b, m.a)):
            merged = rest.plus(ctx.linear(a), k)
            if len(merged.terms) < len(rest.terms):
                # k*op(a, b) == k*a + k*op(b - a, 0), and -op(u, v) == dual(-u, -v).
                if k > 0:
                    inner = type(m)(n.Sub(b, a), n.const(0, t))
                else:
                    dual = n.Max if isinstance(m, n.Min) else n.Min
                    inner = dual(n.Sub(a, b), n.const(0, t))
                return n.Add(merged.to_expr(t), n.Mul(inner, n.const(abs(k), t)))
    return None


def _quotient_by_bounds(x: n.Expr, c1: n.Const, ctx: Analysis) -> n.Expr | None:
    """x // c is a constant when all of x's range lies between two multiples of c."""
    lo, hi = ctx.bounds(x)
    c = c1.value
    if c != 0 and lo // c == hi // c:
        return n.const(lo // c, x.type)
    return None


def _remainder_by_bounds(x: n.Expr, c1: n.Const, ctx: Analysis) -> n.Expr | None:
    """x % c is x - c*q when all of x's range lies in [c*q, c*(q + 1))."""
    lo, hi = ctx.bounds(x)
    c = c1.value
    if c != 0 and lo // c == hi // c:
        return n.Sub(x, n.const(c * (lo // c), x.type))
    return None


def _split(form: LinearForm, c: int) -> tuple[LinearForm, LinearForm]:
    """(q, r) with form == c*q + r, q holding the terms (and constant) divisible by c."""
    q = {a: k // c for a, k in form.terms.items() if k % c == 0}
    r = {a: k for a, k in form.terms.items() if k % c != 0}
    if form.constant % c == 0:
        return LinearForm(q, form.constant // c), LinearForm(r, 0)
    return LinearForm(q, 0), LinearForm(r, form.constant)


def _split_quotient(x: n.Expr, c1: n.Const, t: Type, ctx: Analysis) -> n.Expr | None:
    """(c*q + r) // c == q + r // c, for the terms q of x divisible by c."""
    c = c1.value
    if c == 0:
        return None
    q, r = _split(ctx.linear(x), c)
    if not q.terms and q.constant == 0:
        return None
    return n.Add(q.to_expr(t), n.Div(r.to_expr(t), c1))


def _reduce_remainder(x: n.Expr, c1: n.Const, t: Type, ctx: Analysis) -> n.Expr | None:
    """(c*q + r) % c == r % c, with r's constant reduced modulo c."""
    c = c1.value
    if c == 0:
        return None
    form = ctx.linear(x)
    _, r = _split(form, c)
    r = LinearForm(r.terms, r.constant % c)
    if r == form:
        return None
    return n.Mod(r.to_expr(t), c1)


def _common_factor(x: n.Expr, c1: n.Const, ctx: Analysis) -> int:
    """The largest g > 0 dividing c and every coefficient and the constant of x."""
    form = ctx.linear(x)
    return gcd(form.coefficient_gcd(), form.constant, c1.value)


def _divide_common_factor(x: n.Expr, c1: n.Const, t: Type, ctx: Analysis) -> n.Expr | None:
    """(g*m) // (g*d) == m // d."""
    g = _common_factor(x, c1, ctx)
    if g <= 1:
        return None
    return n.Div(ctx.linear(x).divided(g).to_expr(t), n.const(c1.value // g, t))


def _scale_remainder(x: n.Expr, c1: n.Const, t: Type, ctx: Analysis) -> n.Expr | None:
    """(g*m) % (g*d) == (m % d) * g."""
    g = _common_factor(x, c1, ctx)
    if g <= 1:
        return None
    m = ctx.linear(x).divided(g).to_expr(t)
    return n.Mul(n.Mod(m, n.const(c1.value // g, t)), n.const(g, t))


RULES = [
    Rule(x + y, _normalize, INT),                # (a + 8) - a -> 8, 3 + x -> x + 3, x + 0 -> x
    Rule(x - y, _normalize, INT),                # (x*4 + y) - (y + x*4) -> 0, x - 5 -> x + -5
    Rule(x * y, _normalize, INT),                # (x*2)*3 -> x*6, (x + 1)*4 -> x*4 + 4, x*0 -> 0
    Rule(x + y, _absorb_min_max, NO_OVERFLOW),   # x - max(x, 0) + 3 -> min(x, 0) + 3
    Rule(x - y, _absorb_min_max, NO_OVERFLOW),   # x - max(x, y) -> min(x - y, 0)
    Rule(x - 0, x, FLOAT),                       # x - 0.0 -> x
    Rule(x * 1, x, FLOAT),                       # x * 1.0 -> x
    Rule(x / 1, x, FLOAT),                       # x / 1.0 -> x

    Rule(x // 0, 0, INT),                        # x // 0 -> 0
    Rule(x // 1, x, INT),                        # x // 1 -> x
    Rule(x // -1, 0 - x, INT),                   # x // -1 -> 0 - x
    Rule(0 // x, 0, INT),                        # 0 // x -> 0
    Rule(x // c1, _quotient_by_bounds, INT),     # x // 8 -> 0 when 0 <= x < 8
    Rule((x // c1) // c2, x // (c1 * c2), INT,   # (x // 2) // 4 -> x // 8
         when=lambda c1, c2, t: c1.value > 0 and c2.value > 0 and fits(c1.value * c2.value, t)),
    Rule(x // c1, _split_quotient, NO_OVERFLOW),        # (x*8 + y) // 8 -> x + y // 8
    Rule(x // c1, _divide_common_factor, NO_OVERFLOW),  # (x*6 + 4) // 4 -> (x*3 + 2) // 2

    Rule(x % 0, 0, INT),                         # x % 0 -> 0
    Rule(x % 1, 0, INT),                         # x % 1 -> 0
    Rule(x % -1, 0, INT),                        # x % -1 -> 0
    Rule(0 % x, 0, INT),                         # 0 % x -> 0
    Rule(x % x, 0, INT),                         # x % x -> 0
    Rule((x % c1) % c2, x % c2, INT,             # (x % 8) % 4 -> x % 4
         when=lambda c1, c2: c1.value and c2.value and c1.value % c2.value == 0),
    Rule(x % c1, _remainder_by_bounds, INT),     # x % 8 -> x when 0 <= x < 8
    Rule(x % c1, _reduce_remainder, NO_OVERFLOW),  # (x*8 + y + 9) % 8 -> (y + 1) % 8
    Rule(x % c1, _scale_remainder, NO_OVERFLOW),   # (x*4) % 8 -> (x % 2)*4
]
