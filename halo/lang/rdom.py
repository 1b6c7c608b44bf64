"""Reduction domains: the iteration spaces of update definitions and inline reductions.

Dimensions are listed outermost first, like everything in halo: `RDom((0, H), (0, W))`
iterates rows in the outer loop and columns in the inner one. `r.x`, `r.y`, `r.z`, `r.w`
(or `r[i]`) are its dimensions in that order.
"""
from __future__ import annotations

from halo.errors import DefinitionError
from halo.lang.expr import Expr, as_expr
from halo.lang.names import claim_name
from halo.lang.var import RVar

_LETTERS = "xyzw"


class RDom:
    def __init__(self, *ranges, name: str | None = None,
                 rvar_names: tuple[str, ...] | None = None):
        """`rvar_names` names the dimensions (default `r.x`, `r.y`, ...); rfactor uses it
        to keep the names of the loops it turns into reduction variables. `RDom(input)`
        spans the input: a Buffer's array has a shape now, so its extents are constants
        (loops over them can be unrolled); an ImageParam's are its symbolic extents."""
        if len(ranges) == 1 and hasattr(ranges[0], "shape") and hasattr(ranges[0], "name"):
            source = ranges[0]
            array = getattr(source, "array", None)  # a Buffer
            shape = source.shape if array is None else array.shape
            ranges = tuple((0, extent) for extent in shape)
        if not ranges:
            raise DefinitionError("RDom() needs at least one (min, extent) pair or a buffer")
        self.name = claim_name(name, "r")
        bounds = []
        for i, r in enumerate(ranges):
            if not (isinstance(r, (tuple, list)) and len(r) == 2):
                raise DefinitionError(f"RDom {self.name}: dimension {i} is {r!r}; each "
                                      "dimension is a (min, extent) pair")
            lo, extent = as_expr(r[0]), as_expr(r[1])
            for what, e in (("min", lo), ("extent", extent)):
                if not e.type.is_integer:
                    raise DefinitionError(f"RDom {self.name}: the {what} of dimension {i} "
                                          f"has type {e.type}; it must be an integer")
            bounds.append((lo, extent))
        self.bounds: tuple[tuple[Expr, Expr], ...] = tuple(bounds)
        self.predicate: Expr | None = None
        if rvar_names is None:
            rvar_names = tuple(f"{self.name}.{_LETTERS[i] if i < 4 else i}"
                               for i in range(len(bounds)))
        self.rvars = tuple(RVar(self, i, nm) for i, nm in enumerate(rvar_names))

    def __len__(self) -> int:
        return len(self.rvars)

    def __getitem__(self, i: int) -> RVar:
        return self.rvars[i]

    x = property(lambda self: self._dim(0))
    y = property(lambda self: self._dim(1))
    z = property(lambda self: self._dim(2))
    w = property(lambda self: self._dim(3))

    def _dim(self, i: int) -> RVar:
        if i >= len(self.rvars):
            raise DefinitionError(f"RDom {self.name} has {len(self.rvars)} dimension(s); "
                                  f"`.{_LETTERS[i]}` is dimension {i}")
        return self.rvars[i]

    def where(self, predicate: object) -> RDom:
        """Restrict the domain to the points where `predicate` holds (may be called
        several times; the conditions are and-ed)."""
        p = as_expr(predicate)
        if not p.type.is_bool:
            raise DefinitionError(f"RDom {self.name}.where() needs a bool condition, "
                                  f"not {p.type}")
        self.predicate = p if self.predicate is None else (self.predicate & p)
        return self

    def _as_expr(self) -> Expr:
        if len(self.rvars) != 1:
            raise DefinitionError(f"RDom {self.name} has {len(self.rvars)} dimensions; "
                                  "use r.x, r.y, ... to pick one")
        return self.rvars[0]

    def provided_names(self) -> set[str]:
        return {r.name for r in self.rvars}

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"RDom({self.name!r}, {len(self)} dims)"


def _delegate(op: str):
    def method(self, *args):
        return getattr(self._as_expr(), op)(*args)
    method.__name__ = op
    return method


# A 1-D RDom is usable wherever its single RVar is: `f[r - 1]`, `r % 3`, `r < n`.
for _op in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
            "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
            "__rmod__", "__neg__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
    setattr(RDom, _op, _delegate(_op))
