"""Substitution of variables and collection of free variables."""
from __future__ import annotations

from collections.abc import Mapping

from halo.ir import nodes as n
from halo.ir.visitor import IRMutator, Node, rewrite, walk


class _Substitute(IRMutator):
    def __init__(self, replacements: Mapping[str, n.Expr]):
        self.replacements = replacements

    def visit_Var(self, v: n.Var) -> n.Expr:
        return self.replacements.get(v.name, v)


def substitute(node: Node, replacements: Mapping[str, n.Expr]) -> Node:
    """Replace every `Var` named in `replacements` (names are unique in halo IR, so no
    capture can happen)."""
    if not replacements:
        return node
    return _Substitute(replacements).mutate(node)


def var_names(node: Node) -> set[str]:
    """Names of all `Var`s used in `node`."""
    return {x.name for x in walk(node) if isinstance(x, n.Var)}


def uses_var(node: Node, name: str) -> bool:
    return any(isinstance(x, n.Var) and x.name == name for x in walk(node))


def calls_to(node: Node, name: str) -> list[n.Call]:
    return [x for x in walk(node) if isinstance(x, n.Call) and x.name == name]


def free_vars(node: Node) -> set[str]:
    """Names of the `Var`s used in `node` that no enclosing For, LetStmt or Let binds."""
    free: set[str] = set()

    def visit(x, bound: frozenset[str]) -> None:
        if isinstance(x, n.Var):
            if x.name not in bound:
                free.add(x.name)
            return
        if isinstance(x, n.For):
            visit(x.min, bound)
            visit(x.extent, bound)
            visit(x.body, bound | {x.name})
            return
        if isinstance(x, (n.LetStmt, n.Let)):
            visit(x.value, bound)
            visit(x.body, bound | {x.name})
            return
        for field in x.__dataclass_fields__:
            child = getattr(x, field)
            for c in (child if isinstance(child, tuple) else (child,)):
                for y in (c if isinstance(c, tuple) else (c,)):
                    if isinstance(y, (n.Expr, n.Stmt)):
                        visit(y, bound)

    visit(node, frozenset())
    return free


def expand_lets(e: n.Expr, lets: dict[str, n.Expr]) -> n.Expr:
    """`e` with the let-bound names in it replaced by their values (`lets`), transitively."""
    for _ in range(len(lets) + 1):
        names = var_names(e) & lets.keys()
        if not names:
            break
        e = substitute(e, {nm: lets[nm] for nm in names})
    return e


def without_promises(node: Node) -> Node:
    """`node` with each `promise_clamped(v, lo, hi)` replaced by `v` (the promise is
    for bounds inference; the value is `v`)."""
    return rewrite(node, lambda x: without_promises(x.args[0]) if n.is_promise(x) else None)
