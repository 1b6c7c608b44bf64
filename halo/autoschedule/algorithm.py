"""The algorithm as the autoscheduler sees it: every Func's stages with their loop
variables, the accesses each stage makes (with the Jacobian of the access's arguments
where they are affine), its operation histogram, and the regions one box of a stage's
loop variables reads of each Func and input.

Built once per search from the pipeline's Funcs and the sizes (`Algorithm.of`); the
search never lowers. Regions of affine accesses are interval arithmetic on the Jacobian
(the fast path); any other argument is bounded by `halo.analysis.interval.bounds_of_expr`
over symbolic intervals, as bounds inference bounds it (`Algorithm._bounds`), then
evaluated at the box, and memoized by box.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field

from halo.analysis.interval import Interval, bounds_of_expr
from halo.analysis.simplify import simplify
from halo.errors import HaloError
from halo.ir import nodes as n
from halo.ir.substitute import free_vars, substitute
from halo.ir.visitor import child_nodes

# Integer divisions by a run-time value (a boundary's `x % width`): one lane at a time.
SERIAL_DIVISIONS = ("Div_int_by_value", "Mod_int_by_value")

Box = tuple[tuple[int, int], ...]  # inclusive (lo, hi) per dimension, outermost first
UNBOUNDED = 1 << 40


@dataclass(frozen=True)
class Access:
    """One call in a stage: `callee[args]`. `affine[k]` is argument k as
    (coefficients by loop variable of the stage, constant), or None where it isn't
    affine in them (a clamp, a gather, a division)."""
    callee: str
    is_input: bool
    args: tuple[n.Expr, ...]
    affine: tuple[tuple[tuple[int, ...], int] | None, ...]
    pattern: tuple[tuple[tuple[int, ...], int] | None, ...] = ()  # affine under clamps


@dataclass
class StageModel:
    """One definition of a Func: its loop variables outermost first (pure Vars, then
    reduction variables with their constant ranges), what it reads, what it computes."""
    func: str
    index: int
    pure: tuple[str, ...]
    rvars: tuple[tuple[str, int, int], ...]   # (name, min, extent)
    accesses: tuple[Access, ...]
    ops: Counter
    lhs: tuple[n.Expr, ...]
    predicated: bool = False

    @property
    def loop_vars(self) -> tuple[str, ...]:
        return self.pure + tuple(r[0] for r in self.rvars)

    @property
    def label(self) -> str:
        return self.func if self.index == 0 else f"{self.func}.update({self.index - 1})"


@dataclass
class FuncModel:
    name: str
    dims: tuple[str, ...]
    bytes: int
    stages: list[StageModel]
    is_output: bool
    consumers: list[tuple[str, int]] = field(default_factory=list)  # (func, stage)
    lane_dim: int | None = None  # a dimension rfactor made to vectorize, if any
    copy_of: str | None = None  # the input a packed panel copies (`with_panels`)

    @property
    def has_updates(self) -> bool:
        return len(self.stages) > 1


class Algorithm:
    """The Funcs of a pipeline (realization order: producers first), its inputs'
    extents and the outputs' boxes, at the estimated sizes."""

    def __init__(self, funcs: dict[str, FuncModel], inputs: dict[str, tuple[Box, int]],
                 outputs: dict[str, Box], scalars: dict[str, int | float]):
        self.funcs = funcs
        self.inputs = inputs
        self.outputs = outputs
        self.scalars = scalars
        self._memo: dict = {}
        self._reads: dict[tuple[str, str], bool] = {}
        self._moves: dict[tuple[str, int, str, str], bool] = {}
        self._fixed_boxes: dict[tuple[str, str], bool] = {}
        self._forms: dict = {}  # id of an Access: its arguments' affine forms, sparse
        for f in funcs.values():
            for s in f.stages:
                for a in s.accesses:
                    if not a.is_input and a.callee != f.name and a.callee in funcs:
                        funcs[a.callee].consumers.append((f.name, s.index))
        self.full_regions = self._full_regions()

    @staticmethod
    def of(env, input_boxes: dict[str, Box], output_boxes: dict[str, Box],
           scalars: dict[str, int | float]) -> Algorithm:
        """The model of `env` (a `halo.lang.environment.Environment`) with the inputs'
        and outputs' boxes known."""
        extents = {f"{name}.extent.{k}": hi - lo + 1
                   for name, box in input_boxes.items() for k, (lo, hi) in enumerate(box)}
        funcs = {}
        for name, f in env.funcs.items():
            stages = [_stage_model(name, k, d, [v.name for v in f.args], {**extents, **scalars})
                      for k, d in enumerate(f.definitions)]
            funcs[name] = FuncModel(name, tuple(v.name for v in f.args), f.type.bytes, stages,
                                    any(o is f for o in env.outputs))
        inputs = {name: (input_boxes[name], inp.dtype.bytes) for name, inp in env.inputs.items()}
        return Algorithm(funcs, inputs, output_boxes, {**extents, **scalars})

    def with_local(self, name: str) -> Algorithm:
        """This algorithm after `name.cache_write("local")`: `name`'s definitions move to
        `name_local`, and `name` copies it out."""
        f = self.funcs[name]
        local = f"{name}_local"
        moved = [StageModel(local, s.index, s.pure, s.rvars,
                            tuple(_renamed(a, name, local) for a in s.accesses), s.ops, s.lhs,
                            s.predicated) for s in f.stages]
        copy = _copy_stage(name, f.dims, local, is_input=False)
        funcs: dict[str, FuncModel] = {}
        for g in self.funcs.values():
            if g.name == name:
                funcs[local] = FuncModel(local, f.dims, f.bytes, moved, False)
                funcs[name] = FuncModel(name, f.dims, f.bytes, [copy], f.is_output)
            else:
                funcs[g.name] = FuncModel(g.name, g.dims, g.bytes, g.stages, g.is_output,
                                          lane_dim=g.lane_dim, copy_of=g.copy_of)
        return Algorithm(funcs, self.inputs, self.outputs, self.scalars)

    def with_panels(self, reader: str) -> Algorithm:
        """This algorithm with a copy of each input that `reader`'s updates read a strip
        of rows from as their reduction runs (`B[k, j]` in a matmul: k moves the row),
        made by `B.cache_read("global", [reader])` and named as halo names it
        (`B_global`, dimensions `B_global_d0`, ...). Inlined, a copy is no copy; computed
        at a tile loop of the reader's consumer, it is a packed panel: the strip of the
        tile, contiguous, read from the cache it fits in (`apps/matmul.py`)."""
        f = self.funcs[reader]
        panels: dict[str, str] = {}
        for s in f.stages[1:]:
            rvars = range(len(s.pure), len(s.loop_vars))
            for a in s.accesses:
                if a.is_input and a.affine and None not in a.affine and \
                        any(coeffs[r] for coeffs, _ in a.affine[:-1] for r in rvars):
                    panels.setdefault(a.callee, f"{a.callee}_global")
        if not panels:
            return self
        funcs: dict[str, FuncModel] = {}
        for g in self.funcs.values():
            stages = g.stages
            if g.name == reader:
                for source, name in panels.items():
                    box, size = self.inputs[source]
                    dims = tuple(f"{name}_d{k}" for k in range(len(box)))
                    copy = _copy_stage(name, dims, source, is_input=True)
                    funcs[name] = FuncModel(name, dims, size, [copy], False, copy_of=source)
                stages = [StageModel(s.func, s.index, s.pure, s.rvars, tuple(
                    Access(panels[a.callee], False, a.args, a.affine, a.pattern)
                    if a.is_input and a.callee in panels else a for a in s.accesses),
                    s.ops, s.lhs, s.predicated) for s in g.stages]
            funcs[g.name] = FuncModel(g.name, g.dims, g.bytes, stages, g.is_output,
                                      lane_dim=g.lane_dim, copy_of=g.copy_of)
        return Algorithm(funcs, self.inputs, self.outputs, self.scalars)

    def panel_readers(self) -> list[str]:
        """The stages `with_panels` gave copies of their inputs, in order."""
        return list(dict.fromkeys(c for f in self.funcs.values() if f.copy_of
                                  for c, _ in f.consumers))

    def reads(self, func: str, name: str) -> bool:
        """Whether Func `func` reads Func `name`, directly or through other Funcs."""
        key = (func, name)
        if key not in self._reads:
            self._reads[key] = any(
                not a.is_input and a.callee != func and (a.callee == name or
                                                         self.reads(a.callee, name))
                for s in self.funcs[func].stages for a in s.accesses)
        return self._reads[key]

    def reads_a_fixed_box(self, func: str, name: str) -> bool:
        """Whether a box of one size of Func `func`'s loop variables reads a box of one
        size of Func `name`, wherever the box is: every coordinate on the way is affine
        (no clamp, division or gather) and no Func on the way (`name` included) has an
        update that writes a region of its own (a scatter's, whatever the box)."""
        key = (func, name)
        if key not in self._fixed_boxes:
            self._fixed_boxes[key] = all(
                None not in a.affine and not self._scatters(a.callee) and
                (a.callee == name or self.reads_a_fixed_box(a.callee, name))
                for s in self.funcs[func].stages for a in s.accesses
                if not a.is_input and a.callee != func and
                (a.callee == name or self.reads(a.callee, name)))
        return self._fixed_boxes[key]

    def _scatters(self, func: str) -> bool:
        """Whether an update of Func `func` writes along a dimension that isn't one of its
        pure loops."""
        f = self.funcs[func]
        return any(set(f.dims) - set(s.pure) for s in f.stages[1:])

    def read_moves(self, stage: StageModel, name: str, var: str) -> bool:
        """Whether what `stage` reads of Func `name`, directly or through the Funcs it
        calls, moves as its loop variable `var` moves (conv's output-channel loop moves
        what it reads of conv, but not what conv reads of its padded input)."""
        key = (stage.func, stage.index, name, var)
        if key not in self._moves:
            self._moves[key] = self._read_moves(stage, name, var)
        return self._moves[key]

    def _read_moves(self, stage: StageModel, name: str, var: str) -> bool:
        k = stage.loop_vars.index(var)
        for a in stage.accesses:
            if a.is_input or a.callee == stage.func:
                continue
            moved = [d for d, form in enumerate(a.affine) if form is None or form[0][k]]
            if moved and a.callee == name:
                return True
            if not moved or not self.reads(a.callee, name):
                continue
            g = self.funcs[a.callee]
            # A dimension of the callee that an update doesn't iterate as a pure loop
            # (a scatter) counts as moving whatever the update reads.
            if any(g.dims[d] not in t.loop_vars or self.read_moves(t, name, g.dims[d])
                   for t in g.stages for d in moved):
                return True
        return False

    def region_read(self, stage: StageModel, access: Access, box: dict[str, tuple[int, int]],
                    tiled: Collection[str] = ()) -> Box:
        """The box of `access.callee` that `stage` reads while its loop variables range
        over `box` (inclusive intervals by name), those in `tiled` over a tile of an
        enclosing loop (see `_bounds`)."""
        forms = self._forms.get(id(access))
        if forms is None:
            forms = self._forms[id(access)] = _sparse_forms(stage, access)
        out = []
        for k, form in enumerate(forms):
            if form is None:
                out.append(self._bounds(access.args[k], box, tiled))
                continue
            lo, terms = form
            hi = lo
            for c, v in terms:
                a, b = box[v]
                if c > 0:
                    lo, hi = lo + c * a, hi + c * b
                else:
                    lo, hi = lo + c * b, hi + c * a
            out.append((lo, hi))
        return tuple(out)

    def _bounds(self, arg: n.Expr, box: dict[str, tuple[int, int]], tiled: Collection[str]
                ) -> tuple[int, int]:
        """The interval of a coordinate that isn't affine, as lowering's bounds inference
        finds it, then evaluated at this box. There, a variable in `tiled` ranges over a
        tile of an enclosing loop that may start anywhere, `[v, v + extent - 1]` for a
        symbolic `v` (one value where the tile is one wide); any other over a region
        whose two ends are unrelated symbols. So a wrap (`x % width`) of more than one
        value is its whole range, as halo realizes it, though this box alone would read
        less; a clamp is exact."""
        key = (arg, tuple(sorted(box.items())), tuple(sorted(set(tiled) & set(box))))
        found = self._memo.get(key)
        if found is None:
            values = {**self._constants, **{v: n.const(a) for v, (a, b) in box.items()
                                            if v in tiled and a == b}}
            scope, at = {}, {}
            for v, (a, b) in box.items():
                if v in values:
                    continue
                lo = n.Var(f"{v}.box_min")
                hi = n.Add(lo, n.const(b - a)) if v in tiled else n.Var(f"{v}.box_max")
                scope[v] = Interval(lo, hi)
                at.update({lo.name: n.const(a), f"{v}.box_max": n.const(b)})
            bounds = bounds_of_expr(substitute(arg, values), scope)
            lo, hi = (None if e is None else simplify(substitute(e, at))
                      for e in (bounds.min, bounds.max))
            found = self._memo[key] = (_int_or(lo, -UNBOUNDED), _int_or(hi, UNBOUNDED))
        return found

    @property
    def _constants(self) -> dict[str, n.Expr]:
        return {k: n.const(v) for k, v in self.scalars.items()}

    def stage_box(self, stage: StageModel, region: Box) -> dict[str, tuple[int, int]]:
        """The loop variables' ranges of `stage` over the Func's `region`."""
        f = self.funcs[stage.func]
        box = {d: region[k] for k, d in enumerate(f.dims) if d in stage.pure}
        for name, lo, extent in stage.rvars:
            box[name] = (lo, lo + extent - 1)
        return box

    def _full_regions(self) -> dict[str, Box]:
        """The region of every Func that the outputs need (what compute_root realizes),
        consumers before producers."""
        regions: dict[str, Box] = dict(self.outputs)
        for f in reversed(list(self.funcs.values())):
            if f.name not in regions:
                raise HaloError(f"Func {f.name} is not read by any output")
            for s in f.stages:
                box = self.stage_box(s, regions[f.name])
                for a in s.accesses:
                    if not a.is_input and a.callee in self.funcs and a.callee != f.name:
                        read = self.region_read(s, a, box)
                        regions[a.callee] = union(regions.get(a.callee), read)
        return regions


def _sparse_forms(stage: StageModel, access: Access) -> list:
    """Per argument of `access`, None (not affine) or (constant, ((coefficient, loop
    variable), ...)) over the nonzero coefficients: what `region_read` evaluates."""
    names = stage.loop_vars
    return [None if form is None else
            (form[1], tuple((c, v) for c, v in zip(form[0], names, strict=True) if c))
            for form in access.affine]


def union(a: Box | None, b: Box) -> Box:
    if a is None:
        return b
    # The hottest function of the search: comparisons, not min/max calls.
    return tuple([(x0 if x0 < y0 else y0, x1 if x1 > y1 else y1)
                  for (x0, x1), (y0, y1) in zip(a, b, strict=True)])


def extent(box: Box) -> tuple[int, ...]:
    return tuple(hi - lo + 1 for lo, hi in box)


def _int_or(e: n.Expr | None, default: int) -> int:
    if e is not None:
        e = simplify(e)
        if isinstance(e, n.Const):
            return int(e.value)
    return default


def _stage_model(func: str, index: int, d, dims: list[str],
                 constants: dict[str, int | float]) -> StageModel:
    pure = tuple(dims) if index == 0 else tuple(v for v in dims if v in d.pure_var_names())
    rvars = []
    if d.rdom is not None:
        values = {k: n.const(v) for k, v in constants.items()}
        for r, (lo, ext) in zip(d.rdom.rvars, d.rdom.bounds, strict=True):
            lo_v, ext_v = (simplify(substitute(e.node, values)) for e in (lo, ext))
            if not (isinstance(lo_v, n.Const) and isinstance(ext_v, n.Const)):
                raise HaloError(f"Func {func}: the range of {r.name} depends on a value with "
                                "no estimate; pass estimates= for the inputs and Params it "
                                "reads")
            rvars.append((r.name, int(lo_v.value), int(ext_v.value)))
    loop_vars = pure + tuple(r[0] for r in rvars)
    accesses, ops = [], Counter()
    _count(d.value, loop_vars, accesses, ops, index=False, seen=set(),
           inner=pure[-1] if pure else None)
    lhs = tuple(d.args) if index > 0 else ()
    return StageModel(func, index, pure, tuple(rvars), tuple(accesses), ops, lhs,
                      d.rdom is not None and d.rdom.predicate is not None)


def _count(e: n.Expr, loop_vars: tuple[str, ...], accesses: list, ops: Counter,
           index: bool, seen: set, inner: str | None) -> None:
    """Record the accesses of `e` and count its operations; those computing an access's
    coordinates count as `index` (strength-reduced and hoisted in compiled loops), except
    an integer division by a run-time value of something that moves along the innermost
    dimension `inner` (a wrapping or mirroring boundary's): no vector unit divides
    integers, so each lane divides alone. A subexpression that occurs again (`seen`) is
    computed once: compiled code shares it (harris's response reads Sxx three times;
    inlined, its box sum runs once)."""
    stack = [e]
    while stack:
        node = stack.pop()
        if not isinstance(node, (n.Var, n.Const)):
            if node in seen:
                continue
            seen.add(node)
        if isinstance(node, n.Call) and node.kind in (n.CallKind.FUNC, n.CallKind.INPUT):
            accesses.append(Access(node.name, node.kind is n.CallKind.INPUT, node.args,
                                   tuple(_affine(a, loop_vars) for a in node.args),
                                   tuple(_affine(_unclamped(a), loop_vars)
                                         for a in node.args)))
            ops[_op_class(node)] += 1
            for a in node.args:
                _count(a, loop_vars, accesses, ops, index=True, seen=seen, inner=inner)
            continue
        kind = _op_class(node)
        if index and not isinstance(node, (n.Var, n.Const)) and not (
                kind in SERIAL_DIVISIONS and inner in free_vars(node.a)):
            ops["index"] += 1
        else:
            ops[kind] += 1
        stack.extend(child_nodes(node))


def _op_class(node: n.Expr) -> str:
    """The operation histogram's bucket of a node."""
    if isinstance(node, n.Call):
        return {n.CallKind.FUNC: "load_func", n.CallKind.INPUT: "load_input",
                n.CallKind.MATH: f"math_{node.name}"}.get(node.kind, "intrinsic")
    if isinstance(node, (n.Var, n.Const)):
        return "leaf"
    kind = type(node).__name__
    if kind in ("Div", "Mod"):
        if node.type.is_float:
            return f"{kind}_float"
        return f"{kind}_int" if isinstance(node.b, n.Const) else f"{kind}_int_by_value"
    return kind


def _affine(e: n.Expr, names: tuple[str, ...]) -> tuple[tuple[int, ...], int] | None:
    """`e` as integer coefficients of `names` plus a constant, or None."""
    if isinstance(e, n.Const) and e.type.is_integer:
        return (0,) * len(names), int(e.value)
    if isinstance(e, n.Var):
        if e.name not in names:
            return None
        return tuple(int(v == e.name) for v in names), 0
    if isinstance(e, (n.Add, n.Sub)):
        a, b = _affine(e.a, names), _affine(e.b, names)
        if a is None or b is None:
            return None
        sign = 1 if isinstance(e, n.Add) else -1
        return tuple(x + sign * y for x, y in zip(a[0], b[0], strict=True)), a[1] + sign * b[1]
    if isinstance(e, n.Mul):
        a, b = _affine(e.a, names), _affine(e.b, names)
        if a is None or b is None:
            return None
        if not any(b[0]):
            return tuple(x * b[1] for x in a[0]), a[1] * b[1]
        if not any(a[0]):
            return tuple(x * a[1] for x in b[0]), a[1] * b[1]
    return None


def _unclamped(e: n.Expr) -> n.Expr:
    """`e` without the clamps around it (`min(max(e, lo), hi)`, a boundary condition's
    or a tail's), for the access pattern."""
    while isinstance(e, (n.Min, n.Max)):
        e = e.a
    return e


def _copy_stage(name: str, dims: tuple[str, ...], source: str, is_input: bool) -> StageModel:
    """The pure stage `name[dims] = source[dims]`."""
    identity = tuple((tuple(int(i == j) for j in range(len(dims))), 0)
                     for i in range(len(dims)))
    return StageModel(name, 0, dims, (), (Access(source, is_input, tuple(
        n.Var(d) for d in dims), identity, identity),), Counter(), ())


def _renamed(a: Access, old: str, new: str) -> Access:
    return a if a.callee != old else Access(new, a.is_input, a.args, a.affine, a.pattern)
