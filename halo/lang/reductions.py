"""Inline reductions: `halo.sum(e)`, `product`, `maximum`, `minimum`.

Each reduces `e` over the RDom whose variables it uses and evaluates to a call of a new
Func defined over the pure Vars `e` uses (in order of first appearance):

    out[y, x] = halo.sum(k[r.x] * inp[y, x + r.x])
    # is  sum_1[y, x] = 0;  sum_1[y, x] += k[r.x] * inp[y, x + r.x];  out[y, x] = sum_1[y, x]

The result keeps the type of `e` (a sum of uint8 wraps around: cast first).
"""
from __future__ import annotations

from collections.abc import Callable

from halo.errors import DefinitionError
from halo.ir import nodes as n
from halo.ir.types import Type
from halo.ir.visitor import walk
from halo.lang.expr import Expr, as_expr
from halo.lang.expr import max as max_
from halo.lang.expr import min as min_
from halo.lang.func import Func
from halo.lang.names import unique_name
from halo.lang.rdom import RDom
from halo.lang.var import Var
from halo.program import provided_names


def _reduce(kind: str, e: object, init: Callable[[Type], object],
            combine: Callable[[Expr, Expr], Expr]) -> Expr:
    e = as_expr(e)
    if not any(isinstance(d, RDom) for d in e.deps):
        raise DefinitionError(f"halo.{kind}(...) needs an expression that uses an RDom's "
                              "variables (r.x, ...)")
    provided = provided_names(e.deps)
    predicates = [d.predicate.node for d in e.deps
                  if isinstance(d, RDom) and d.predicate is not None]
    pure: list[str] = []
    for node in (x for root in (e.node, *predicates) for x in walk(root)):
        if isinstance(node, n.Var) and node.name not in provided and node.name not in pure:
            pure.append(node.name)
    f = Func(unique_name(kind))
    args = tuple(Var(name) for name in pure)
    f[args] = Expr(n.const(init(e.type), e.type))
    f[args] = combine(f[args], e)
    return f[args]


def sum(e: object) -> Expr:  # noqa: A001 - the API's name
    """The sum of `e` over its RDom (see the module docstring)."""
    return _reduce("sum", e, lambda t: 0, lambda acc, v: acc + v)


def product(e: object) -> Expr:
    """The product of `e` over its RDom."""
    return _reduce("product", e, lambda t: 1, lambda acc, v: acc * v)


def maximum(e: object) -> Expr:
    """The largest value of `e` over its RDom (NaN if any value is NaN, as `np.max`)."""
    return _reduce("maximum", e, lambda t: t.min_value(), max_)


def minimum(e: object) -> Expr:
    """The smallest value of `e` over its RDom (NaN if any value is NaN, as `np.min`)."""
    return _reduce("minimum", e, lambda t: t.max_value(), min_)
