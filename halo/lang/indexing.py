"""The index expressions of `owner[key]` (a Func or an input), checked."""
from __future__ import annotations

from halo.errors import DefinitionError
from halo.ir.printer import expr_to_str
from halo.ir.types import int32
from halo.lang.expr import Expr, as_expr


def index_args(owner: str, key: object, ndim: int | None) -> tuple[Expr, ...]:
    """The index Exprs of `owner[key]`, checked: integer-typed, right count."""
    if not isinstance(key, tuple):
        key = (key,)
    args = tuple(as_expr(k) for k in key)
    for i, a in enumerate(args):
        if not (a.type.is_integer or a.type.is_bool):
            raise DefinitionError(f"{owner}: index {i} has type {a.type}; indices must be "
                                  "integers (use halo.cast(halo.int32, ...) or floor)")
    if ndim is not None and len(args) != ndim:
        raise DefinitionError(f"{owner} has {ndim} dimension(s) but was indexed with "
                              f"{len(args)}: {owner}[{', '.join(_short(a) for a in args)}]")
    return tuple(a if a.type == int32 else a.astype(int32) for a in args)


def _short(e: Expr) -> str:
    return expr_to_str(e.node)
