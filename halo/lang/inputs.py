"""Inputs of a pipeline: `ImageParam` (an array bound at run time), `Buffer` (an array
bound now, without copying), and `Param` (a scalar bound at run time).

Indexing an input gives an Expr; `shape` gives symbolic extents (`inp.extent.0`, ...)
usable anywhere in the algorithm.
"""
from __future__ import annotations

import numpy as np

from halo.errors import DefinitionError
from halo.ir import nodes as n
from halo.ir.types import Type, as_type, int32
from halo.ir.values import checked_scalar
from halo.lang.caching import CacheRead
from halo.lang.expr import Expr
from halo.lang.func import Func
from halo.lang.indexing import index_args
from halo.lang.names import claim_name


class _Input(CacheRead):
    """What ImageParam and Buffer share: a name, a dtype, a rank, symbolic extents, and
    `cache_read` (a copy stage of the input)."""

    def __init__(self, dtype: object, ndim: int, name: str | None, prefix: str):
        if not isinstance(ndim, int) or ndim < 0:
            raise DefinitionError(f"ndim must be a non-negative int, not {ndim!r}")
        self.name = claim_name(name, prefix)
        self.dtype: Type = as_type(dtype)
        self.ndim = ndim
        self.shape: tuple[Expr, ...] = tuple(
            Expr(n.Var(f"{self.name}.extent.{i}", int32), (self,)) for i in range(ndim))

    def _new_func(self, name: str) -> Func:
        return Func(name)

    def __getitem__(self, key: object) -> Expr:
        args = index_args(self.name, key, self.ndim)
        deps = frozenset({self}).union(*(a.deps for a in args))
        return Expr(n.Call(self.dtype, self.name, tuple(a.node for a in args),
                           n.CallKind.INPUT), deps)

    def provided_names(self) -> set[str]:
        return {f"{self.name}.extent.{i}" for i in range(self.ndim)}

    __hash__ = object.__hash__


class ImageParam(_Input):
    """An input array of a given dtype and rank, bound when the pipeline runs."""

    def __init__(self, dtype: object, ndim: int, name: str | None = None):
        super().__init__(dtype, ndim, name, "input")

    def __repr__(self) -> str:
        return f"ImageParam({self.dtype}, {self.ndim}, {self.name!r})"


class Buffer(_Input):
    """An input array bound now (not copied: later writes to it are seen by later runs)."""

    def __init__(self, array: np.ndarray, name: str | None = None):
        if not isinstance(array, np.ndarray):
            raise DefinitionError(f"Buffer needs a NumPy array, not {type(array).__name__}")
        if isinstance(array, np.ma.MaskedArray):
            raise DefinitionError(masked_array_refusal(f"Buffer({name!r})"))
        super().__init__(array.dtype, array.ndim, name, "buffer")
        self.array = array

    def __repr__(self) -> str:
        return f"Buffer({self.name!r}, shape={self.array.shape}, {self.dtype})"


class Param(Expr):
    """A scalar bound when the pipeline runs (or to `default` if not given). The default
    must be a value of the Param's type (`halo.ir.values.checked_scalar`)."""

    __slots__ = ("name", "default")

    def __init__(self, dtype: object, name: str | None = None, default: object = None):
        t = as_type(dtype)
        name = claim_name(name, "p")
        super().__init__(n.Var(name, t))
        self.deps = frozenset({self})
        self.name = name
        self.default = None if default is None else checked_scalar(
            t, default, f"Param {name} ({t})'s default", DefinitionError)

    def provided_names(self) -> set[str]:
        return {self.name}

    def __repr__(self) -> str:
        return f"Param({self.type}, {self.name!r})"


def masked_array_refusal(what: str) -> str:
    """Why a masked array can't be an input: halo reads every element, masked or not."""
    return (f"{what} is a masked array, but halo reads every element and ignores masks; "
            "pass a.filled(value) to choose what masked elements hold, or np.asarray(a) to "
            "use the data under the mask as it is")
