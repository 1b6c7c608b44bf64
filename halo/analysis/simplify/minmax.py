"""Rules for Min and Max.

Rules that only reorder comparisons are exact for every integer type; the ones comparing
linear forms (`min(x + 1, x + 3) -> x + 1`) assume int32/int64 doesn't overflow. Floats
get only min(x, x) -> x (with a NaN operand, min(x, max(x, y)) is NaN, not x).
"""
from __future__ import annotations

from halo.analysis.simplify.linear import LinearForm
from halo.analysis.simplify.pattern import (
    ANY,
    INT,
    NO_OVERFLOW,
    Analysis,
    Rule,
    c1,
    c2,
    max_,
    min_,
    x,
    y,
)
from halo.ir import nodes as n
from halo.ir.types import Type


def _pick_by_bounds(e: n.Expr, x: n.Expr, y: n.Expr, ctx: Analysis) -> n.Expr | None:
    """min(x, y) is x when x <= y over their whole ranges (max: y)."""
    (xlo, xhi), (ylo, yhi) = ctx.bounds(x), ctx.bounds(y)
    if xhi <= ylo:
        return x if isinstance(e, n.Min) else y
    if yhi <= xlo:
        return y if isinstance(e, n.Min) else x
    return None


def _pick_by_difference(e: n.Expr, x: n.Expr, y: n.Expr, ctx: Analysis) -> n.Expr | None:
    """min(x, y) is x when x - y, as a linear form, is never positive (max: y)."""
    lo, hi = ctx.form_bounds(ctx.linear(x).minus(ctx.linear(y)))
    if hi <= 0:
        return x if isinstance(e, n.Min) else y
    if lo >= 0:
        return y if isinstance(e, n.Min) else x
    return None


def _factor_common_terms(e: n.Expr, x: n.Expr, y: n.Expr, t: Type,
                         ctx: Analysis) -> n.Expr | None:
    """min(c + a, c + b) == c + min(a, b), for the terms c that x and y share."""
    fx, fy = ctx.linear(x), ctx.linear(y)
    common = {atom: k for atom, k in fx.terms.items() if fy.terms.get(atom) == k}
    constant = fx.constant if fx.constant == fy.constant else 0
    if not common and not constant:
        return None
    shared = LinearForm(common, constant)
    rest_x, rest_y = fx.minus(shared).to_expr(t), fy.minus(shared).to_expr(t)
    return n.Add(shared.to_expr(t), type(e)(rest_x, rest_y))


RULES = [
    Rule(min_(x, x), x, ANY),                                  # min(x, x) -> x
    Rule(min_(x, y), _pick_by_bounds, INT),                    # min(u8, 255) -> u8
    Rule(min_(x, y), _pick_by_difference, NO_OVERFLOW),        # min(x + 1, x + 3) -> x + 1
    Rule(min_(min_(x, c1), c2), min_(x, min_(c1, c2)), INT),   # min(min(x, 3), 5) -> min(x, 3)
    Rule(min_(max_(x, c1), c2), c2, INT,                       # min(max(x, 8), 5) -> 5
         when=lambda c1, c2: c1.value >= c2.value),
    Rule(min_(min_(x, c1), y), min_(min_(x, y), c1), INT),  # min(min(x,3), y) -> min(min(x,y), 3)
    Rule(min_(x, max_(x, y)), x, INT),                         # min(x, max(x, y)) -> x
    Rule(min_(x, min_(x, y)), min_(x, y), INT),                # min(x, min(x, y)) -> min(x, y)
    Rule(min_(x, y), _factor_common_terms, NO_OVERFLOW),       # min(x + y, x + 3) -> x + min(y, 3)

    Rule(max_(x, x), x, ANY),                                  # max(x, x) -> x
    Rule(max_(x, y), _pick_by_bounds, INT),                    # max(u8, 0) -> u8
    Rule(max_(x, y), _pick_by_difference, NO_OVERFLOW),        # max(x + 1, x + 3) -> x + 3
    Rule(max_(max_(x, c1), c2), max_(x, max_(c1, c2)), INT),   # max(max(x, 3), 5) -> max(x, 5)
    Rule(max_(min_(x, c1), c2), c2, INT,                       # max(min(x, 2), 5) -> 5
         when=lambda c1, c2: c1.value <= c2.value),
    Rule(max_(max_(x, c1), y), max_(max_(x, y), c1), INT),  # max(max(x,3), y) -> max(max(x,y), 3)
    Rule(max_(x, min_(x, y)), x, INT),                         # max(x, min(x, y)) -> x
    Rule(max_(x, max_(x, y)), max_(x, y), INT),                # max(x, max(x, y)) -> max(x, y)
    Rule(max_(x, y), _factor_common_terms, NO_OVERFLOW),       # max(x + y, x) -> x + max(y, 0)
]
