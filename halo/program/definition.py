"""`Definition`: one definition of a Func as IR (`func[args] = value`), and which
names in it stand for objects other than pure Vars."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from halo.ir import nodes as n

if TYPE_CHECKING:
    from halo.lang.rdom import RDom


@dataclass(frozen=True)
class Definition:
    """One definition of a Func: `func[args] = value`, over `rdom` for updates that
    use one. `deps` holds the objects the definition refers to (Funcs, inputs, Params,
    RDoms). `pure` names an update's pure Vars, those that index their own dimension,
    in the Func's order; an update may also use them in other dimensions (`g[x, x]`, a
    diagonal). None: each Var on the left side once, as in a pure definition."""
    args: tuple[n.Expr, ...]
    value: n.Expr
    rdom: RDom | None
    deps: frozenset
    pure: tuple[str, ...] | None = None

    @property
    def predicate(self) -> n.Expr | None:
        """The RDom's `where` condition as IR, or None where there is none."""
        rdom = self.rdom
        return rdom.predicate.node if rdom is not None and rdom.predicate is not None else None

    def pure_var_names(self) -> list[str]:
        """The pure Vars of this definition (one loop each), outermost first, each once
        (rfactor's intermediate may write a pure Var at a second dimension too:
        `intm[u, u, r.y]` when the factored reduction variable indexes the left side)."""
        if self.pure is not None:
            return list(self.pure)
        provided = provided_names(self.deps)
        return list(dict.fromkeys(a.name for a in self.args
                                  if isinstance(a, n.Var) and a.name not in provided))


def provided_names(deps: Iterable[object]) -> set[str]:
    """Names of the Vars that the objects in `deps` stand for (Params, input extents,
    reduction variables), as opposed to pure Vars."""
    names: set[str] = set()
    for d in deps:
        if hasattr(d, "provided_names"):
            names |= d.provided_names()
    return names
