"""Regions for the reference interpreter: which box of every Func gets computed.

The rules (the compiler's bounds inference follows the same ones):

* An output's region is the box the caller asks for.
* Walking consumers before producers, a Func's region is the union of what every
  definition of every consumer reads of it: the call's indices, bounded with the
  consumer's pure Vars over the consumer's region and RVars over their RDom.
* A Func with update definitions also covers what its updates write (their left sides)
  and read of the Func itself, repeated until nothing grows. A diagonal update (one
  using a pure Var in another dimension too, `g[x, x]`) runs its pure Vars over the
  region consumers read (`required`), as compiled code does, not the grown one.
* Input reads must lie inside the bound arrays.

Bounds come from interval arithmetic (`halo.analysis.interval.bounds_of_expr`) after Params
and input extents are substituted as constants; the simplifier folds each end to a
constant. An index with no finite bound (a data-dependent index into a Func without a
clamp) is a `BoundsError`.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from halo.analysis.interval import Interval, bounds_of_expr
from halo.analysis.simplify import simplify
from halo.errors import BoundsError, input_bounds_error
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str
from halo.ir.substitute import substitute, var_names
from halo.ir.types import int32
from halo.ir.visitor import walk
from halo.lang.environment import Environment
from halo.lang.func import Definition, Func
from halo.lang.rdom import RDom

Box = tuple[tuple[int, int], ...]
"""(min, max) per dimension, both inclusive, outermost first; max < min means empty."""

Constants = Mapping[str, n.Const]
"""Params and input extents (`inp.extent.0`) by name."""


def infer_regions(env: Environment, output_box: Box, constants: Constants,
                  input_shapes: Mapping[str, Sequence[int]]
                  ) -> tuple[dict[str, Box], dict[str, Box]]:
    """The region of every Func of `env` that is needed, given the box its outputs are
    realized over (Funcs that nothing reads are left out), and the region its consumers
    read (`required`, before its own updates grow it). Raises `BoundsError` for
    unbounded reads and for reads outside an input."""
    required: dict[str, Box] = {}
    for out in env.outputs:
        required[out.name] = _union(required.get(out.name), output_box)
    regions: dict[str, Box] = {}
    for func in reversed(env.funcs.values()):
        box = required.get(func.name)
        if box is None:
            continue
        if is_empty(box):  # an empty output: it reads nothing
            regions[func.name] = box
            continue
        box = _grow_by_own_updates(func, box, constants)
        regions[func.name] = box
        for definition in func.definitions:
            scope = _scope(func, definition, required[func.name] if is_diagonal(
                func, definition) else box, constants)
            if scope is None:
                continue
            for call in _reads(definition):
                if call.name != func.name:
                    read = _box_of_call(call, scope, constants, func.name)
                    required[call.name] = _union(required.get(call.name), read)
    _check_input_reads(required, input_shapes)
    return regions, required


def rdom_ranges(rdom: RDom, constants: Constants) -> tuple[tuple[int, int], ...]:
    """(min, extent) of each dimension of `rdom`, outermost first."""
    ranges = []
    for i, (lo, extent) in enumerate(rdom.bounds):
        values = [_to_int(substitute(e.node, constants)) for e in (lo, extent)]
        if None in values:
            raise BoundsError(
                f"RDom {rdom.name}: dimension {i} is ({expr_to_str(lo.node)}, "
                f"{expr_to_str(extent.node)}), which is not known before the pipeline runs; "
                "RDom bounds may use numbers, Params and input shapes only")
        ranges.append((values[0], values[1]))
    return tuple(ranges)


def is_empty(box: Box) -> bool:
    return any(hi < lo for lo, hi in box)


def _union(a: Box | None, b: Box) -> Box:
    if a is None:
        return b
    return tuple((min(lo1, lo2), max(hi1, hi2))
                 for (lo1, hi1), (lo2, hi2) in zip(a, b, strict=True))


def _grow_by_own_updates(func: Func, box: Box, constants: Constants) -> Box:
    """`box` grown to cover what the update definitions of `func` write and read of
    `func` itself (a recurrence `f[r] = f[r - 1] + ...` reads `f[-1]`)."""
    required = box
    for _ in range(func.dimensions + 2):
        grown = box
        for definition in func.definitions[1:]:
            scope = _scope(func, definition, required if is_diagonal(func, definition)
                           else box, constants)
            if scope is None:
                continue
            lhs = n.Call(func.type, func.name, definition.args, n.CallKind.FUNC)
            for call in [lhs, *(c for c in _reads(definition) if c.name == func.name)]:
                grown = _union(grown, _box_of_call(call, scope, constants, func.name))
        if grown == box:
            return box
        box = grown
    raise BoundsError(f"the update definitions of {func.name} write or read ever more of "
                      f"{func.name} (its region grew to {box}); clamp the indices of its "
                      "updates into a fixed range")


def is_diagonal(func: Func, definition: Definition) -> bool:
    """Whether `definition` uses a pure Var in a dimension other than its own (`g[x, x]`,
    g[y, x] pure)."""
    own = {a.name for a, v in zip(definition.args, func.args, strict=True)
           if isinstance(a, n.Var) and a.name == v.name}
    return any(var_names(a) & own for a, v in zip(definition.args, func.args, strict=True)
               if not (isinstance(a, n.Var) and a.name == v.name))


def _scope(func: Func, definition: Definition, box: Box,
           constants: Constants) -> dict[str, Interval] | None:
    """Intervals of the Vars of `definition`: pure Vars over `box`, RVars over their
    RDom. None when the RDom is empty (the definition never runs)."""
    scope = {v.name: _interval(lo, hi) for v, (lo, hi) in zip(func.args, box, strict=True)}
    if definition.rdom is not None:
        for rvar, (lo, extent) in zip(definition.rdom.rvars,
                                      rdom_ranges(definition.rdom, constants), strict=True):
            if extent <= 0:
                return None
            scope[rvar.name] = _interval(lo, lo + extent - 1)
    return scope


def _interval(lo: int, hi: int) -> Interval:
    return Interval(n.const(lo, int32), n.const(hi, int32))


def _reads(definition: Definition) -> Iterator[n.Call]:
    """Every call of a Func or input in `definition`: its left side, its value, and
    its RDom's predicate."""
    roots = [*definition.args, definition.value]
    if definition.rdom is not None and definition.rdom.predicate is not None:
        roots.append(definition.rdom.predicate.node)
    for root in roots:
        for node in walk(root):
            if isinstance(node, n.Call) and node.kind is not n.CallKind.MATH:
                yield node


def _box_of_call(call: n.Call, scope: Mapping[str, Interval], constants: Constants,
                 reader: str) -> Box:
    box = []
    for dim, arg in enumerate(call.args):
        interval = bounds_of_expr(substitute(arg, constants), scope)
        lo, hi = _to_int(interval.min), _to_int(interval.max)
        if lo is None or hi is None:
            raise _unbounded_error(call, dim, reader)
        box.append((lo, hi))
    return tuple(box)


def _unbounded_error(call: n.Call, dim: int, reader: str) -> BoundsError:
    index = expr_to_str(call.args[dim])
    if reader == call.name:
        where = f"an update of Func {reader} accesses {expr_to_str(call)}"
    else:
        what = "input" if call.kind is n.CallKind.INPUT else "Func"
        where = f"Func {reader} reads {what} {call.name} at {expr_to_str(call)}"
    return BoundsError(
        f"{where}, and halo can't bound index {dim}, {index}: its range depends on data; "
        f"clamp it into the range you mean, e.g. halo.clamp({index}, 0, n - 1)")


def _to_int(e: n.Expr | None) -> int | None:
    """The value of a closed integer expression, or None if it is unbounded or doesn't
    fold to a constant."""
    if e is None:
        return None
    folded = simplify(e)
    return int(folded.value) if isinstance(folded, n.Const) else None


def _check_input_reads(required: Mapping[str, Box],
                       input_shapes: Mapping[str, Sequence[int]]) -> None:
    for name, shape in input_shapes.items():
        if name not in required:
            continue
        for dim, ((lo, hi), extent) in enumerate(zip(required[name], shape, strict=True)):
            if lo < 0 or hi >= extent:
                raise input_bounds_error(name, dim, lo, hi, extent)
