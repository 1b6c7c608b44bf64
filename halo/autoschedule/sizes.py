"""The sizes the autoscheduler plans for: the box of every output and input, and the
value of every Param, from what the user gave.

In order: `estimates={func_or_input_or_param: shape}` (a shape tuple, or `(min, extent)`
pairs, outermost first; a Param's value), `set_estimates` on output Funcs, the arrays of
`inputs={param: array}` (and Buffers' own arrays), and Params' defaults. An output with no
size is inferred from its inputs where its definitions read an input at `v + c` in each
dimension (through other Funcs, and through boundary conditions' clamps): the largest
box that reads inside the input. An input with no size is sized by what the outputs read
of it. What is still missing is a `HaloError` that names each Func or input dimension.
"""
from __future__ import annotations

import numpy as np

from halo.autoschedule.algorithm import Box
from halo.errors import HaloError
from halo.ir import nodes as n
from halo.ir.visitor import walk

PLACEHOLDER = 1 << 24  # an unknown input extent while its size is read from the outputs


def resolve_sizes(env, estimates: dict | None, inputs: dict | None
                  ) -> tuple[dict[str, Box], dict[str, Box], dict[str, int | float], list[str]]:
    """(input boxes, output boxes, Param values, the inputs with no size yet) for the
    pipeline `env`."""
    given = {_name(k): v for k, v in (estimates or {}).items()}
    arrays = {_name(k): v for k, v in (inputs or {}).items()}
    scalars: dict[str, int | float] = {}
    for name, p in env.params.items():
        value = given.get(name, arrays.get(name, p.default))
        if value is not None:
            scalars[name] = value
    input_boxes: dict[str, Box] = {}
    for name, inp in env.inputs.items():
        if name in given:
            input_boxes[name] = _box(given[name], inp.ndim, f"input {name}")
        elif name in arrays:
            input_boxes[name] = tuple((0, s - 1) for s in np.shape(arrays[name]))
        elif hasattr(inp, "array"):
            input_boxes[name] = tuple((0, s - 1) for s in inp.array.shape)
    output_boxes: dict[str, Box] = {}
    missing = []
    for out in env.outputs:
        if out.name in given:
            output_boxes[out.name] = _box(given[out.name], out.dimensions, f"Func {out.name}")
        elif out.schedule.estimates is not None:
            output_boxes[out.name] = tuple((lo, lo + e - 1) for lo, e in out.schedule.estimates)
        else:
            inferred = _inferred(env, out, input_boxes)
            for k, b in enumerate(inferred):
                if b is None:
                    missing.append(f"Func {out.name} dimension {k} ({out.args[k].name})")
            if not missing:
                output_boxes[out.name] = tuple(inferred)
    unknown = [name for name in env.inputs if name not in input_boxes]
    if missing:
        raise HaloError("halo.autoschedule needs a size for " + "; ".join(missing) +
                        ": pass estimates={func: shape}, call func.set_estimates([(min, "
                        "extent), ...]), or pass the input arrays as inputs= so the size "
                        "can be inferred")
    return input_boxes, output_boxes, scalars, unknown


def _name(key: object) -> str:
    return key if isinstance(key, str) else key.name


def _box(value: object, ndim: int, what: str) -> Box:
    items = list(value)
    if len(items) != ndim:
        raise HaloError(f"the estimate for {what} has {len(items)} dimension(s); it has {ndim}")
    box = []
    for v in items:
        if isinstance(v, (tuple, list)) and len(v) == 2:
            lo, e = int(v[0]), int(v[1])
        else:
            lo, e = 0, int(v)
        if e < 1:
            raise HaloError(f"the estimate for {what} has an extent {e}; extents are >= 1")
        box.append((lo, lo + e - 1))
    return tuple(box)


def _inferred(env, out, input_boxes: dict[str, Box]) -> list[tuple[int, int] | None]:
    """Per dimension of `out`, the largest range whose reads of the inputs stay inside
    them (those reached at `v + c`), or None where no input tells."""
    maps: dict[str, list[tuple[int, int] | None]] = {
        out.name: [(k, 0) for k in range(out.dimensions)]}
    reads: list[tuple[int, str, int, int, bool]] = []  # (out dim, input, dim, offset, clamped)
    for f in reversed(list(env.funcs.values())):
        if f.name not in maps:
            continue
        by_var = {v.name: maps[f.name][k] for k, v in enumerate(f.args)}
        for d in f.definitions:
            for node in walk(d.value):
                if not (isinstance(node, n.Call) and node.kind in (n.CallKind.FUNC,
                                                                    n.CallKind.INPUT)):
                    continue
                for j, arg in enumerate(node.args):
                    form = _shifted_var(arg)
                    if form is None or by_var.get(form[0]) is None:
                        continue
                    dim, offset = by_var[form[0]]
                    if node.kind is n.CallKind.INPUT:
                        reads.append((dim, node.name, j, offset + form[1], form[2]))
                    elif node.name in env.funcs and node.name != f.name:
                        slots = maps.setdefault(node.name,
                                                [None] * env.funcs[node.name].dimensions)
                        if slots[j] is None:
                            slots[j] = (dim, offset + form[1])
    result: list[tuple[int, int] | None] = []
    for k in range(out.dimensions):
        best = None
        for name in {r[1] for r in reads if r[0] == k}:
            for j in {r[2] for r in reads if r[0] == k and r[1] == name}:
                if name not in input_boxes:
                    continue
                lo, hi = input_boxes[name][j]
                offsets = [r[3] for r in reads if r[:3] == (k, name, j) and not r[4]]
                if offsets:
                    box = (lo - min(offsets), hi - max(offsets))
                else:
                    box = (lo, hi)
                if box[1] >= box[0] and (best is None or box[1] - box[0] < best[1] - best[0]):
                    best = box
        result.append(best)
    return result


def _shifted_var(e: n.Expr) -> tuple[str, int, bool] | None:
    """`e` as (Var name, constant offset, whether clamped) for `v`, `v + c`, `v - c`, and
    those inside `min(max(., lo), hi)`."""
    clamped = False
    while isinstance(e, (n.Min, n.Max)):
        clamped = True
        e = e.a
    if isinstance(e, n.Var):
        return e.name, 0, clamped
    if isinstance(e, (n.Add, n.Sub)) and isinstance(e.a, n.Var) and isinstance(e.b, n.Const):
        return e.a.name, int(e.b.value) * (1 if isinstance(e, n.Add) else -1), clamped
    return None
