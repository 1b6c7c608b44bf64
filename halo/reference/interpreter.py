"""The reference interpreter: the living definition of what a halo algorithm means.

`reference(f, shape, inputs=...)` evaluates the algorithm of `f` with NumPy, ignoring every
schedule. Every backend and every schedule is tested against it: integers must match bit
for bit, floats up to the reassociation of reductions. Where this module and a backend
disagree, this module is right (or halo/ir/nodes.py, whose semantics it implements, is
unclear and must be fixed).

How it runs:

1. Regions (`regions.py`): consumers before producers, each Func gets the box its
   consumers read of it, grown by what its own updates touch; input reads are checked.
2. Producers before consumers, each Func is realized as an array over its region. The
   pure definition is evaluated once over the whole box with broadcasting index grids
   (each pure Var an `np.arange` along its own axis); calls gather from realized arrays.
3. Update definitions run in order, sequentially over their RDom (first dimension
   outermost) and in parallel over pure Vars, by one of three strategies:

   reduce   `f[p] = f[p] op e` (op: + - * min max), left side free of RVars, no other
            read of f: e is reduced over the RDom in chunks and combined into f.
   scatter  the same form with RVars on the left side (`h[inp[r]] += 1`): `ufunc.at`.
   step     anything else (recurrences `f[r] = f[r - 1] + g[r]`, updates whose predicate
            reads f, updates without an RDom): one RDom point at a time, vectorized over
            the pure Vars.

   Integer results are exactly those of sequential evaluation (wrapping sums and products
   don't depend on order); float reductions may be reassociated. reduce and scatter exist
   for speed (a 256^3 matmul in ~20 ms instead of minutes); tests/reference/test_interpreter.py
   times them and checks them against step.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from math import prod

import numpy as np

from halo.errors import InputError, InternalError
from halo.ir import nodes as n
from halo.ir.deep_stack import run_deep
from halo.ir.substitute import calls_to, var_names
from halo.ir.types import Type, int32
from halo.ir.values import checked_origin, checked_shape
from halo.lang.environment import Environment, bind
from halo.lang.func import Definition, Func
from halo.reference.regions import (
    Box,
    Constants,
    infer_regions,
    is_diagonal,
    is_empty,
    rdom_ranges,
)

Value = np.ndarray | np.generic
"""What an expression evaluates to: an array that broadcasts against the index grids."""

_CHUNK_ELEMENTS = 1 << 22
"""Bound on the elements of the temporaries of one reduce or scatter chunk."""


def reference(f: Func | Sequence[Func], shape: Sequence[int] | None = None,
              inputs: dict | None = None,
              origin: Sequence[int] | None = None) -> np.ndarray | list[np.ndarray]:
    """The values of `f` over origin..origin+shape (origin defaults to zeros), as a new
    array of f's dtype, computed from the algorithm alone. `f` may be a list of Funcs of
    the same dimensionality, realized over the same box; then the result is a list.
    `inputs` maps ImageParams and Params (or their names) to arrays and scalars."""
    return run_deep("halo.reference", _reference, f, shape, inputs, origin)


def _reference(f, shape, inputs, origin):
    outputs = list(f) if isinstance(f, (list, tuple)) else [f]
    env = Environment.of(outputs)
    arrays, scalars = bind(env, inputs)
    output_box = _output_box(outputs, shape, origin)
    constants = _constants(env, arrays, scalars)
    regions, required = infer_regions(env, output_box, constants,
                                      {name: a.shape for name, a in arrays.items()})
    bindings = Bindings({name: c.type.numpy.type(c.value) for name, c in constants.items()},
                        {name: (a, (0,) * a.ndim) for name, a in arrays.items()})
    for func in env.funcs.values():  # producers first; each reads the arrays before it
        region = regions.get(func.name)
        if region is not None:
            bindings.arrays[func.name] = (
                _realize(func, region, required[func.name], bindings, constants),
                tuple(lo for lo, _ in region))
    results = [_crop(*bindings.arrays[out.name], output_box) for out in outputs]
    return results if isinstance(f, (list, tuple)) else results[0]


def _output_box(outputs: list[Func], shape: Sequence[int] | None,
                origin: Sequence[int] | None) -> Box:
    if not outputs:
        raise InputError("reference([]) needs at least one Func to realize")
    ndim = outputs[0].dimensions
    names = ", ".join(out.name for out in outputs)
    if any(out.dimensions != ndim for out in outputs):
        raise InputError(f"reference([{names}]): outputs realized together need the same "
                         "number of dimensions, but they have "
                         f"{[out.dimensions for out in outputs]}")
    if shape is None and ndim > 0:
        raise InputError(f"reference({names}) needs a shape: one extent per dimension "
                         f"({ndim}), outermost first")
    call = f"reference({names}, ...)"
    shape = checked_shape(shape if shape is not None else (), ndim, call)
    origin = checked_origin(origin, ndim, call)
    return tuple((o, o + s - 1) for o, s in zip(origin, shape, strict=True))


def _constants(env: Environment, arrays: Mapping[str, np.ndarray],
               scalars: Mapping[str, object]) -> dict[str, n.Const]:
    """Params by name, and input extents as `{input}.extent.{i}`."""
    constants = {name: n.const(value, env.params[name].type) for name, value in scalars.items()}
    for name, array in arrays.items():
        for i, extent in enumerate(array.shape):
            constants[f"{name}.extent.{i}"] = n.const(extent, int32)
    return constants


def _crop(array: np.ndarray, mins: tuple[int, ...], box: Box) -> np.ndarray:
    window = tuple(slice(lo - m, hi + 1 - m) for (lo, hi), m in zip(box, mins, strict=True))
    view = array[(*window, Ellipsis)]  # the Ellipsis keeps a 0-d result an array
    return array if view.shape == array.shape else view.copy()


# --------------------------------------------------------------------- realization


def _realize(func: Func, region: Box, required: Box, bindings: Bindings,
             constants: Constants) -> np.ndarray:
    """`func` over `region`: its pure definition, then each update in order (a diagonal
    one over `required`, what consumers read: see regions.py)."""
    out = np.empty(tuple(hi - lo + 1 for lo, hi in region), func.type.numpy)
    if is_empty(region):
        return out
    pure, *updates = func.definitions
    names = [v.name for v in func.args]
    out[...] = evaluate(pure.value, bindings.with_values(_grids(names, region, lead=0)))
    own = bindings.with_array(func.name, out, tuple(lo for lo, _ in region))
    for update in updates:
        _run_update(_Update(func, update, out, region, own, constants,
                            required if is_diagonal(func, update) else region))
    return out


def _grids(names: Sequence[str | None], region: Box, lead: int) -> dict[str, np.ndarray]:
    """An int32 `arange` over each named dimension of `region`, along its own axis of an
    array with `lead` extra leading axes (None: a dimension without a pure Var)."""
    ndim = lead + len(region)
    grids = {}
    for i, (name, (lo, hi)) in enumerate(zip(names, region, strict=True)):
        if name is not None:
            shape = [1] * ndim
            shape[lead + i] = -1
            grids[name] = np.arange(lo, hi + 1, dtype=np.int32).reshape(shape)
    return grids


@dataclass
class _Update:
    """One update definition of `func`, applied to `out` (its array over `region`)."""
    func: Func
    definition: Definition
    out: np.ndarray
    region: Box
    bindings: Bindings
    constants: Constants
    pure_region: Box  # where its pure Vars run: `region`, or less for a diagonal update
    pure_names: list[str | None] = field(init=False)
    diagonal: bool = field(init=False)  # a pure Var indexes another dimension too

    def __post_init__(self) -> None:
        self.diagonal = is_diagonal(self.func, self.definition)
        # Dimension i is pure when the left side is the Func's own Var i there.
        self.pure_names = [a.name if isinstance(a, n.Var) and a.name == v.name else None
                           for a, v in zip(self.definition.args, self.func.args, strict=True)]

    @property
    def mins(self) -> tuple[int, ...]:
        return tuple(lo for lo, _ in self.region)

    @property
    def predicate(self) -> n.Expr | None:
        return self.definition.predicate


@dataclass(frozen=True)
class _Reduction:
    """`f[p] = f[p] op e`: `e` is reduced with `reduce` and combined into f with
    `combine` (for `f - e`: reduce with +, combine with -)."""
    e: n.Expr
    reduce: np.ufunc
    combine: np.ufunc


_COMMUTATIVE = {n.Add: np.add, n.Mul: np.multiply, n.Min: np.minimum, n.Max: np.maximum}


def _run_update(u: _Update) -> None:
    """Apply one update definition to `u.out` with the fastest strategy that is exact."""
    rdom = u.definition.rdom
    if rdom is None:
        _update_by_steps(u, ())
        return
    ranges = rdom_ranges(rdom, u.constants)
    if any(extent <= 0 for _, extent in ranges):
        return
    reduction = None if u.diagonal else _reduction_form(u)
    rvar_names = {r.name for r in rdom.rvars}
    if reduction is None:
        _update_by_steps(u, ranges)
    elif any(var_names(arg) & rvar_names for arg in u.definition.args):
        _update_by_scatter(u, ranges, reduction)
    else:
        _update_by_reduction(u, ranges, reduction)


def _reduction_form(u: _Update) -> _Reduction | None:
    """The `_Reduction` that `u` is, if it is `f[p] = f[p] op e` (or `e op f[p]`) and
    neither `e`, the left side nor the predicate read f otherwise."""
    d, name = u.definition, u.func.name
    value = d.value
    here = n.Call(value.type, name, d.args, n.CallKind.FUNC)
    op = type(value)
    if op is n.Sub and value.a == here:
        form = _Reduction(value.b, np.add, np.subtract)
    elif op in _COMMUTATIVE and here in (value.a, value.b):
        e = value.b if value.a == here else value.a
        form = _Reduction(e, _COMMUTATIVE[op], _COMMUTATIVE[op])
    else:
        return None
    others = [form.e, *d.args, *([u.predicate] if u.predicate is not None else [])]
    return None if any(calls_to(x, name) for x in others) else form


def _update_by_reduction(u: _Update, ranges: Sequence[tuple[int, int]], r: _Reduction) -> None:
    """Reduce `e` over the RDom in chunks (a leading axis of flattened RDom points, in
    order) and combine each partial result into the slice of f that the update writes."""
    view = u.out[_slice_index(u, u.bindings)]
    grids = _grids(u.pure_names, u.region, lead=1)
    dtype = u.out.dtype
    identity = _identity(r.reduce, u.func.type)
    for rvars in _rdom_chunks(u, ranges, view.size):
        b = u.bindings.with_values({**grids, **rvars})
        e = evaluate(r.e, b)
        mask = evaluate(u.predicate, b) if u.predicate is not None else True
        shape = np.broadcast_shapes(np.shape(e), np.shape(mask), _chunk_shape(rvars))
        with np.errstate(all="ignore"):  # inf - inf is NaN silently, as in `evaluate`
            partial = r.reduce.reduce(np.broadcast_to(e, shape), axis=0, dtype=dtype,
                                      where=mask, initial=identity)
            r.combine(view, partial, out=view)


def _update_by_scatter(u: _Update, ranges: Sequence[tuple[int, int]], r: _Reduction) -> None:
    """Evaluate the left side and `e` for a chunk of RDom points (in order) and combine
    them into f with `ufunc.at`, which applies repeated indices one after another."""
    grids = _grids(u.pure_names, u.region, lead=1)
    points_per_rdom_point = prod(hi - lo + 1 for (lo, hi), name
                                 in zip(u.region, u.pure_names, strict=True) if name is not None)
    for rvars in _rdom_chunks(u, ranges, points_per_rdom_point):
        b = u.bindings.with_values({**grids, **rvars})
        coords = [grids[name] if name is not None else evaluate(arg, b)
                  for arg, name in zip(u.definition.args, u.pure_names, strict=True)]
        e = evaluate(r.e, b)
        mask = evaluate(u.predicate, b) if u.predicate is not None else True
        shape = np.broadcast_shapes(*map(np.shape, [*coords, e, mask]),
                                    _chunk_shape(rvars))
        keep = np.broadcast_to(mask, shape)
        index = _checked_index(u.func.name, u.out.shape, u.mins,
                               [np.broadcast_to(c, shape)[keep] for c in coords])
        with np.errstate(all="ignore"):
            r.combine.at(u.out, index, np.broadcast_to(e, shape)[keep])


def _update_by_steps(u: _Update, ranges: Sequence[tuple[int, int]]) -> None:
    """The general case: one RDom point at a time (a single step without an RDom),
    each step evaluated over all pure Vars before anything is written."""
    grids = _grids(u.pure_names, u.pure_region, lead=0)
    rvars = u.definition.rdom.rvars if u.definition.rdom is not None else ()
    for point in itertools.product(*(range(lo, lo + extent) for lo, extent in ranges)):
        b = u.bindings.with_values(
            {**grids, **{rv.name: np.int32(v) for rv, v in zip(rvars, point, strict=True)}})
        mask = evaluate(u.predicate, b) if u.predicate is not None else True
        if not np.any(mask):
            continue
        value = evaluate(u.definition.value, b)
        if not u.diagonal:
            np.copyto(u.out[_slice_index(u, b)], value, where=mask)
            continue
        # A diagonal update writes one point per pure point: each coordinate as an array.
        coords = [grids[name] if name is not None else evaluate(arg, b)
                  for arg, name in zip(u.definition.args, u.pure_names, strict=True)]
        shape = np.broadcast_shapes(*map(np.shape, [*coords, value, mask]))
        keep = np.broadcast_to(mask, shape)
        index = _checked_index(u.func.name, u.out.shape, u.mins,
                               [np.broadcast_to(c, shape)[keep] for c in coords])
        u.out[index] = np.broadcast_to(value, shape)[keep]


def _slice_index(u: _Update, b: Bindings) -> tuple:
    """The part of f that `u` writes at one RDom point: all of each pure dimension, and
    the one coordinate the left side gives in each other dimension (a scalar: the language
    keeps pure Vars out of those dimensions)."""
    index = []
    for dim, (arg, name) in enumerate(zip(u.definition.args, u.pure_names, strict=True)):
        if name is not None:
            index.append(slice(None))
            continue
        (i,) = _checked_index(u.func.name, u.out.shape[dim:dim + 1], u.mins[dim:dim + 1],
                              [evaluate(arg, b)])
        index.append(slice(int(i), int(i) + 1))
    return tuple(index) or (Ellipsis,)  # a 0-d Func: a view, not its scalar


def _rdom_chunks(u: _Update, ranges: Sequence[tuple[int, int]],
                 elements_per_point: int) -> Iterator[dict[str, np.ndarray]]:
    """The RDom's points in order, flattened onto a leading axis, in chunks of at most
    `_CHUNK_ELEMENTS / elements_per_point` points: each RVar's values by name."""
    extents = [extent for _, extent in ranges]
    total = prod(extents)
    step = max(1, _CHUNK_ELEMENTS // max(1, elements_per_point))
    trailing = (1,) * len(u.region)
    for start in range(0, total, step):
        coords = np.unravel_index(np.arange(start, min(start + step, total)), extents)
        yield {rv.name: (c + lo).astype(np.int32).reshape((-1, *trailing))
               for rv, (lo, _), c in zip(u.definition.rdom.rvars, ranges, coords, strict=True)}


def _chunk_shape(rvars: Mapping[str, np.ndarray]) -> tuple[int, ...]:
    """(points in the chunk, 1, 1, ...): puts the RDom axis into a broadcast shape even
    where a value doesn't depend on the RVars."""
    return next(iter(rvars.values())).shape


def _identity(reduce: np.ufunc, t: Type) -> int | float:
    """The start value of a reduction, also what masked-out RDom points contribute."""
    if reduce is np.minimum:
        return t.max_value()
    if reduce is np.maximum:
        return t.min_value()
    return reduce.identity


def _checked_index(name: str, shape: Sequence[int], mins: Sequence[int],
                   coords: Sequence[Value]) -> tuple[np.ndarray, ...]:
    """`coords` as indices into the array of `name` (region minimum subtracted).
    Region inference guarantees they are inside; this turns a bug there into an error
    instead of NumPy's silent wraparound of negative indices."""
    index = []
    for dim, (c, lo, extent) in enumerate(zip(coords, mins, shape, strict=True)):
        i = np.asarray(c, dtype=np.intp) - lo
        if i.size and (i.min() < 0 or i.max() >= extent):
            raise InternalError(
                f"{name} is accessed at [{lo + i.min()}, {lo + i.max()}] in dimension {dim}, "
                f"outside its realized region [{lo}, {lo + extent - 1}]: region inference "
                "missed this access")
        index.append(i)
    return tuple(index)


# --------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Bindings:
    """What expressions see: `values` of Vars (index grids, RVars, Params, input extents)
    and realized `arrays` (Funcs and inputs) with the minimum of each dimension."""
    values: dict[str, Value]
    arrays: dict[str, tuple[np.ndarray, tuple[int, ...]]]

    def with_values(self, values: Mapping[str, Value]) -> Bindings:
        return Bindings({**self.values, **values}, self.arrays)

    def with_array(self, name: str, array: np.ndarray, mins: tuple[int, ...]) -> Bindings:
        return Bindings(self.values, {**self.arrays, name: (array, mins)})


def evaluate(e: n.Expr, bindings: Bindings) -> Value:
    """The value of `e` at every point of the (broadcast) grids in `bindings`, with the
    dtype of `e`. Overflow wraps and invalid float operations give inf/NaN silently."""
    with np.errstate(all="ignore"):
        value = _eval(e, bindings)
    if value.dtype != e.type.numpy:
        raise InternalError(f"the reference interpreter computed {e!r} as {value.dtype}, "
                            f"not {e.type}")
    return value


_BINARY = {
    n.Add: np.add, n.Sub: np.subtract, n.Mul: np.multiply,  # wrap on integer overflow
    n.Min: np.minimum, n.Max: np.maximum,
    n.And: np.bitwise_and, n.Or: np.bitwise_or, n.Xor: np.bitwise_xor,  # logical on bool
    n.EQ: np.equal, n.NE: np.not_equal, n.LT: np.less, n.LE: np.less_equal,
}

_MATH = {
    "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "pow": np.power,
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    "floor": np.floor, "ceil": np.ceil, "round": np.rint,  # rint: half to even
    "abs": np.abs,  # on integers, abs(min) wraps to min
}


def _eval(e: n.Expr, b: Bindings) -> Value:
    match e:
        case n.Const(type=t, value=value):
            return t.numpy.type(value)
        case n.Var(name=name):
            return b.values[name]
        case n.Cast(type=t, value=value):
            return _cast(_eval(value, b), t)
        case n.Div(a=x, b=y) if x.type.is_float:
            return np.divide(_eval(x, b), _eval(y, b))
        case n.Div(a=x, b=y):
            return _floor_div(_eval(x, b), _eval(y, b))
        case n.Mod(a=x, b=y) if x.type.is_float:
            a, d = _eval(x, b), _eval(y, b)
            return a - d * np.floor(a / d)
        case n.Mod(a=x, b=y):
            return _floor_mod(_eval(x, b), _eval(y, b))
        case n.BinaryOp(a=x, b=y):
            return _BINARY[type(e)](_eval(x, b), _eval(y, b))
        case n.Not(a=x):
            return np.invert(_eval(x, b))  # logical on bool, bitwise on integers
        case n.Select(condition=c, true_value=t, false_value=f):
            return np.where(_eval(c, b), _eval(t, b), _eval(f, b))  # both sides evaluated
        case n.Call(kind=n.CallKind.MATH, name=name, args=args) if name in _MATH:
            return _MATH[name](*(_eval(a, b) for a in args))
        case n.Call(kind=n.CallKind.FUNC | n.CallKind.INPUT, name=name, args=args):
            array, mins = b.arrays[name]
            return array[_checked_index(name, array.shape, mins, [_eval(a, b) for a in args])]
        case n.Let(name=name, value=value, body=body):
            return _eval(body, b.with_values({name: _eval(value, b)}))
    raise InternalError(f"the reference interpreter can't evaluate {e!r}: it is not part of "
                        "the algorithm language")


def _cast(x: Value, t: Type) -> Value:
    """float -> int truncates toward zero (NaN gives 0), int -> int wraps, bool -> 0/1,
    x -> bool is x != 0 (NumPy's C casts, except for bool and NaN)."""
    if t.is_bool:
        return np.not_equal(x, 0)
    if np.asarray(x).dtype.kind == "f" and not t.is_float:
        x = np.where(np.isnan(x), 0, x)
    return np.asarray(x).astype(t.numpy)[()]


def _floor_div(x: Value, y: Value) -> Value:
    """Integer floor division with x // 0 == 0 (and min // -1 == min, by wraparound)."""
    zero = np.equal(y, 0)
    quotient = np.floor_divide(x, np.where(zero, y.dtype.type(1), y))
    return np.where(zero, x.dtype.type(0), quotient)


def _floor_mod(x: Value, y: Value) -> Value:
    """Integer modulo with the sign of the divisor and x % 0 == 0."""
    zero = np.equal(y, 0)
    remainder = np.remainder(x, np.where(zero, y.dtype.type(1), y))
    return np.where(zero, x.dtype.type(0), remainder)
