"""Inline reductions: `halo.sum(e)`, `product`, `maximum`, `minimum`.

Each reduces `e` over the RDom whose variables it uses and evaluates to a call of a new
Func defined over the pure Vars `e` uses (in order of first appearance):

    out[y, x] = halo.sum(k[r.x] * inp[y, x + r.x])
    # is  sum0[y, x] = 0;  sum0[y, x] += k[r.x] * inp[y, x + r.x];  out[y, x] = sum0[y, x]

The result keeps the type of `e` (a sum of uint8 wraps around: cast first). As in
Halide, the Func is computed at the innermost loop of the stage that uses it unless it
is placed (see docs/schedule.md). `name=` names it (default: the verb and a number, which
messages and loop nests explain, see `reduction_origins`); the call returned is a
`FuncRef` whose `.func` is the Func, to schedule like any other:

    rowsum = halo.sum(inp[b, r.x], name="rowsum")
    norm[b, c] = inp[b, c] / rowsum
    rowsum.func.compute_at(norm, b)
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
from halo.lang.func import Func, FuncRef
from halo.lang.names import unique_name
from halo.lang.rdom import RDom
from halo.lang.var import Var
from halo.program import provided_names
from halo.schedule.records import InlineReduction


def _reduce(kind: str, e: object, init: Callable[[Type], object],
            combine: Callable[[Expr, Expr], Expr], name: str | None) -> FuncRef:
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
    f = Func(unique_name(kind) if name is None else name)
    args = tuple(Var(v) for v in pure)
    f[args] = Expr(n.const(init(e.type), e.type))
    f[args] = combine(f[args], e)
    f.schedule.inline_reduction = InlineReduction(kind, named=name is not None)
    return f[args]


def sum(e: object, name: str | None = None) -> FuncRef:  # noqa: A001 - the API's name
    """The sum of `e` over its RDom, computed by a Func named `name` (see the module
    docstring)."""
    return _reduce("sum", e, lambda t: 0, lambda acc, v: acc + v, name)


def product(e: object, name: str | None = None) -> FuncRef:
    """The product of `e` over its RDom, computed by a Func named `name`."""
    return _reduce("product", e, lambda t: 1, lambda acc, v: acc * v, name)


def maximum(e: object, name: str | None = None) -> FuncRef:
    """The largest value of `e` over its RDom (NaN if any value is NaN, as `np.max`),
    computed by a Func named `name`."""
    return _reduce("maximum", e, lambda t: t.min_value(), max_, name)


def minimum(e: object, name: str | None = None) -> FuncRef:
    """The smallest value of `e` over its RDom (NaN if any value is NaN, as `np.min`),
    computed by a Func named `name`."""
    return _reduce("minimum", e, lambda t: t.max_value(), min_, name)
