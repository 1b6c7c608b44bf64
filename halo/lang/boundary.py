"""Boundary conditions: Funcs defined everywhere from a source defined on a box.

Each takes a Buffer/ImageParam (whose bounds are its shape) or a Func plus explicit
`bounds` ((min, extent) per dimension, outermost first), and returns a new Func over
fresh Vars. Every coordinate that reaches the source is clamped into the box, so bounds
inference can always see that reads stay inside it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from halo.errors import DefinitionError
from halo.lang.expr import Expr, as_expr, clamp, select
from halo.lang.func import Func
from halo.lang.inputs import Buffer, ImageParam
from halo.lang.names import unique_name
from halo.lang.var import Var

Bounds = Sequence[tuple[object, object]]
Source = Func | ImageParam | Buffer  # what a boundary condition reads inside its box


def _box(source: Source, bounds: Bounds | None, kind: str) -> list[tuple[Expr, Expr]]:
    if bounds is None:
        shape = getattr(source, "shape", None)
        if shape is None or isinstance(source, Func):
            raise DefinitionError(f"boundary.{kind}({getattr(source, 'name', source)}): a Func "
                                  "has no bounds of its own; pass bounds=[(min, extent), ...]")
        return [(as_expr(0), e) for e in shape]
    ndim = getattr(source, "ndim", None) or getattr(source, "dimensions", None)
    if ndim is not None and len(bounds) != ndim:
        raise DefinitionError(f"boundary.{kind}({source.name}): {len(bounds)} bounds given "
                              f"for {ndim} dimension(s)")
    return [(as_expr(lo), as_expr(ext)) for lo, ext in bounds]


def _make(source: Source, bounds: Bounds | None, kind: str,
          coord: Callable[[Expr, Expr, Expr], Expr],
          outside_value: object | None = None) -> Func:
    box = _box(source, bounds, kind)
    out = Func(unique_name(f"{source.name}_{kind}"))
    args = tuple(Var(f"{out.name}_d{i}") for i in range(len(box)))
    coords = [clamp(coord(v, lo, ext), lo, lo + ext - 1)
              for v, (lo, ext) in zip(args, box, strict=True)]
    value = source[tuple(coords)]
    if outside_value is not None:
        inside = None
        for v, (lo, ext) in zip(args, box, strict=True):
            ok = (lo <= v) & (v < lo + ext)
            inside = ok if inside is None else inside & ok
        value = select(inside, value, outside_value) if inside is not None else value
    out[args] = value
    return out


def repeat_edge(source: Source, bounds: Bounds | None = None) -> Func:
    """Outside the box, the nearest edge value: `aaa|abcd|ddd`."""
    return _make(source, bounds, "repeat_edge", lambda v, lo, ext: v)


def constant_exterior(source: Source, value: object, bounds: Bounds | None = None) -> Func:
    """Outside the box, `value`: `vvv|abcd|vvv`."""
    return _make(source, bounds, "constant_exterior", lambda v, lo, ext: v, value)


def repeat_image(source: Source, bounds: Bounds | None = None) -> Func:
    """The box tiles the plane: `bcd|abcd|abc`."""
    return _make(source, bounds, "repeat_image", lambda v, lo, ext: (v - lo) % ext + lo)


def mirror_image(source: Source, bounds: Bounds | None = None) -> Func:
    """Reflection including the edge: `dcba|abcd|dcba`."""
    def coord(v, lo, ext):
        m = (v - lo) % (2 * ext)
        return select(m < ext, m, 2 * ext - 1 - m) + lo
    return _make(source, bounds, "mirror_image", coord)


def mirror_interior(source: Source, bounds: Bounds | None = None) -> Func:
    """Reflection about the edge pixel: `dcb|abcd|cba`."""
    def coord(v, lo, ext):
        m = (v - lo) % (2 * ext - 2)
        return select(m < ext, m, 2 * ext - 2 - m) + lo
    return _make(source, bounds, "mirror_interior", coord)
