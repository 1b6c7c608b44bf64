"""Pure variables (`Var`) and reduction variables (`RVar`, made by `RDom`)."""
from __future__ import annotations

from halo.ir import nodes as n
from halo.ir.types import int32
from halo.lang.expr import Expr
from halo.lang.names import unique_name


class Var(Expr):
    """A pure variable: a dimension of a Func, or a loop name in a schedule.
    Two Vars with the same name are the same variable (as in Halide)."""

    __slots__ = ()

    def __init__(self, name: str | None = None):
        super().__init__(n.Var(name if name is not None else unique_name("v"), int32))

    @property
    def name(self) -> str:
        return self.node.name

    def __repr__(self) -> str:
        return f"Var({self.name!r})"


def vars(names: str) -> tuple[Var, ...]:  # noqa: A001 - the API's name
    """`halo.vars("y x")` -> (Var('y'), Var('x'))."""
    return tuple(Var(name) for name in names.replace(",", " ").split())


class RVar(Expr):
    """One dimension of an RDom; iterates over [min, min + extent)."""

    __slots__ = ("rdom", "index")

    def __init__(self, rdom, index: int, name: str):
        super().__init__(n.Var(name, int32), (rdom,))
        self.rdom = rdom
        self.index = index

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def min(self) -> Expr:
        return self.rdom.bounds[self.index][0]

    @property
    def extent(self) -> Expr:
        return self.rdom.bounds[self.index][1]

    def __repr__(self) -> str:
        return f"RVar({self.name!r})"
