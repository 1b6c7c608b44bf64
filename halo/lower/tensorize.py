"""Tensorize: a loop nest that a schedule tensorized becomes a call of its intrinsic,
once it is proved to compute what the intrinsic's spec computes.

Input: loops with multi-dimensional Provides and Calls (before storage flattening), loop
extents simplified to constants; `stage.tensorize(v, intrinsic)` records. Output: each
tensorized nest (the loops from `v` inward, their lets and guards, one Provide) replaced by
a `TensorCall` whose operands are the elements the spec addresses at coordinates zero;
storage flattening adds their strides.

The proof compares the nest with the spec's definition that the stage stands for (its
reduction for an update stage, else its pure definition, the initialization of a
reduction spec):
  * the nest has the spec's depth, its loops are serial and have the spec's extents (the
    k-th loop from `v` inward stands for the spec's k-th loop: its pure Vars outermost
    first, then its reduction variables);
  * with each spec loop variable written as its loop's (shifted from the loop's min to
    the spec's), the Provide has the spec's operators, constants and types, node for node
    (the operands of a commutative operator in either order);
  * each buffer of the spec stands for one buffer of the nest, always the same (the
    spec's Func for the stage's Func), and every coordinate the spec gives is the nest's
    less an offset that does not vary inside the nest, the same for every access of that
    buffer in that dimension: the same access pattern, translated. The spec's dimensions
    are the buffer's last ones; those before them must not vary inside the nest.
A tail guard (a `guard` split whose extent the tile does not divide, a `shift_inwards`
split of an extent smaller than its factor, an RDom's `where`) stays: the call runs for
the tiles where every guard holds throughout (guards linear in the loop variables, whose
extremes decide), and the original loops run for the others. A `count_stores` build
proves the match but keeps the loops, whose stores it counts.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from halo.analysis.simplify import simplify, simplify_where
from halo.analysis.simplify.const_bounds import type_bounds
from halo.analysis.simplify.simplifier import is_const_true
from halo.errors import InternalError, ScheduleError
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.printer import expr_to_str
from halo.ir.substitute import expand_lets, substitute, var_names, without_promises
from halo.ir.types import Type
from halo.ir.visitor import ScopedMutator, child_nodes, walk
from halo.lower.context import LowerContext
from halo.schedule.conditions import condition_text
from halo.schedule.records import StageSchedule, Tensorize, stage_label
from halo.target import TargetKind

_BUFFERS = (n.CallKind.FUNC, n.CallKind.INPUT)
_COMMUTATIVE = (n.Add, n.Mul, n.Min, n.Max, n.And, n.Or, n.Xor, n.EQ, n.NE)


def tensorize(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    sites = _sites(ctx)
    return _Tensorize(ctx, sites).mutate(stmt) if sites else stmt


@dataclass
class _Site:
    """One tensorize record: the stage (and specialization) it belongs to, as the user
    writes it, and the loop names from its loop inward."""
    where: str
    stage: int
    record: Tensorize
    inner: list[str]

    def call(self) -> str:
        return f"{self.where}.tensorize({self.record.var}, {self.record.intrinsic})"


def _sites(ctx: LowerContext) -> dict[tuple[str, str, str], list[_Site]]:
    """The tensorize records of the pipeline by (Func, stage label, loop name)."""
    sites: dict[tuple[str, str, str], list[_Site]] = {}
    for name, f in ctx.env.funcs.items():
        for k, stage in enumerate(f.schedule.stages):
            label = stage_label(name, k)
            variants: list[tuple[str, StageSchedule]] = [(label, stage), *(
                (f"{label}.specialize({condition_text(s.condition.node)})", s.schedule)
                for s in stage.specializations)]
            for where, sched in variants:
                t = sched.tensorize
                if t is None:
                    continue
                if t.declared is None:
                    raise InternalError(f"{where}.tensorize({t.var}, {t.intrinsic}) was "
                                        "recorded without its Intrinsic")
                names = sched.dim_names()
                if t.var not in names:
                    raise ScheduleError(
                        f"{where}.tensorize({t.var}, {t.intrinsic}): {where} has no loop "
                        f"{t.var} any more (a split or fuse after tensorize removed it); its "
                        f"loops are, outermost first: {', '.join(names)}")
                sites.setdefault((name, label, t.var), []).append(
                    _Site(where, k, t, names[names.index(t.var):]))
    return sites


@dataclass
class _Nest:
    """The statements from a tensorized loop inward: loops, lets (outermost first),
    guards, and what they wrap."""
    loops: list[n.For] = field(default_factory=list)
    lets: list[n.LetStmt] = field(default_factory=list)
    guards: list[n.Expr] = field(default_factory=list)
    leaf: n.Stmt | None = None

    @staticmethod
    def of(loop: n.For) -> _Nest:
        nest = _Nest()
        s: n.Stmt = loop
        while True:
            match s:
                case n.For():
                    nest.loops.append(s)
                    s = s.body
                case n.LetStmt():
                    nest.lets.append(s)
                    s = s.body
                case n.IfThenElse(else_case=None):
                    nest.guards.append(s.condition)
                    s = s.then_case
                case _:
                    nest.leaf = s
                    return nest


class _Tensorize(ScopedMutator):
    def __init__(self, ctx: LowerContext, sites: dict[tuple[str, str, str], list[_Site]]):
        super().__init__()
        self.ctx = ctx
        self.sites = sites
        self.vectorized: list[str] = []  # enclosing vectorized loops, by label
        self.facts: list[n.Expr] = []  # the conditions of the enclosing then-branches

    def visit_For(self, loop: n.For) -> n.Stmt:
        owner = self.ctx.loop_owners.get(loop.name)
        candidates = self.sites.get(owner) if owner is not None else None
        if candidates:
            nest = _Nest.of(loop)
            return self._replace(loop, nest, self._site(candidates, nest))
        vector = loop.kind is n.ForKind.VECTORIZED
        if vector:
            self.vectorized.append(self.ctx.loop_labels.get(loop.name, loop.name))
        try:
            return super().visit_For(loop)
        finally:
            if vector:
                self.vectorized.pop()

    def _site(self, candidates: list[_Site], nest: _Nest) -> _Site:
        """The record whose loops these are (specializations may tensorize the same loop
        name; they differ in the loops inside it)."""
        names = [self.ctx.loop_owners.get(x.name, ("", "", x.name))[2] for x in nest.loops]
        fitting = [s for s in candidates if names[:len(s.inner)] == s.inner]
        if len({id(s.record.declared) for s in fitting}) > 1:
            raise ScheduleError(
                f"{fitting[0].call()} and {fitting[1].call()}: two specializations tensorize "
                "the same loop nest with different intrinsics, which halo can't tell apart "
                "after lowering; give the loops of one of them other names")
        return (fitting or candidates)[0]

    def _replace(self, loop: n.For, nest: _Nest, site: _Site) -> n.Stmt:
        intrinsic = site.record.declared
        what = site.call()
        if self.vectorized:
            raise ScheduleError(f"{what}: the tensorized loops are inside vectorized loop "
                                f"{self.vectorized[-1]}; an intrinsic call can't be "
                                "vectorized: vectorize none of the loops around it")
        if getattr(intrinsic, "scope", "thread") == "warp" and \
                self.ctx.target.kind is not TargetKind.CUDA:
            raise ScheduleError(f"{what}: {intrinsic.name} runs on a GPU warp (scope "
                                f"'warp'); compile for target 'cuda', or tensorize with an "
                                "intrinsic for this target")
        part, definition = _spec_definition(intrinsic, site, what)
        spec_loops = _spec_loops(intrinsic, definition)
        loops = _check_loops(nest, site, spec_loops, what)
        extents = ", ".join(f"{self.ctx.loop_owners[x.name][2]} {x.extent.value} (spec "
                            f"{name} {extent})" for x, (name, _, extent)
                            in zip(loops, spec_loops, strict=True))
        if not isinstance(nest.leaf, n.Provide):
            raise ScheduleError(f"{what}: the loops from {site.record.var} inward hold "
                                f"{_describe(nest.leaf)}, not one definition of "
                                f"{self.ctx.loop_owners[loop.name][1]}; loop extents: {extents}")
        lets = {let.name: let.value for let in nest.lets}
        provide = without_promises(expand_lets(nest.leaf, lets))
        spec_values = {name: _shifted(x, lo) for x, (name, lo, _) in
                       zip(loops, spec_loops, strict=True)}
        inner = {x.name for x in loops}
        matcher = _Matcher(intrinsic.spec.name, intrinsic.spec.type, spec_values, inner)
        try:
            matcher.provide(definition, provide)
        except _Mismatch as m:
            why = f" ({m.why})" if m.why else ""
            raise ScheduleError(
                f"{what}: the loops from {site.record.var} inward don't compute what "
                f"{intrinsic.name}'s spec {intrinsic.spec.name} computes: expected "
                f"{expr_to_str(m.expected)}, found {expr_to_str(m.found)}{why}; loop "
                f"extents: {extents}") from None
        if self.ctx.target.count_stores:
            return loop
        names = matcher.operand_order(definition)
        call = n.TensorCall(intrinsic.name, intrinsic, part, tuple(names),
                            tuple(matcher.origin_call(x) for x in names))
        guards = [without_promises(expand_lets(g, lets)) for g in nest.guards]
        if not guards:
            return call
        whole = [_whole_tile(g, loops, what) for g in guards]
        condition = whole[0]
        for c in whole[1:]:
            condition = n.And(condition, c)
        if self._known(condition):
            return call
        return n.IfThenElse(simplify(condition), call, loop)

    # What holds around a nest, so a guard that always holds there leaves no loops for
    # the tiles the call can't take (a warp array can't have them: block_registers.py).

    def visit_IfThenElse(self, s: n.IfThenElse) -> n.Stmt:
        self.facts.append(s.condition)
        try:
            then_case = self.mutate(s.then_case)
        finally:
            self.facts.pop()
        else_case = None if s.else_case is None else self.mutate(s.else_case)
        return n.IfThenElse(s.condition, then_case, else_case)

    def _known(self, condition: n.Expr) -> bool:
        """Whether `condition` holds wherever it is: from the enclosing lets, the
        constant ranges of the enclosing loops, and the constant bounds on variables
        that the enclosing conditions give (`128 <= C.extent.0`)."""
        ranges: dict[str, tuple[int, int]] = {}
        for loop in self.loops:
            lo = simplify(expand_lets(loop.min, self.lets))
            extent = simplify(expand_lets(loop.extent, self.lets))
            if isinstance(lo, n.Const) and isinstance(extent, n.Const):
                ranges[loop.name] = (int(lo.value), int(lo.value + extent.value - 1))
        for fact in self.facts:
            for c in _conjuncts(simplify(expand_lets(fact, self.lets))):
                _learn(c, ranges)
        return is_const_true(simplify_where(expand_lets(condition, self.lets), ranges))


def _describe(s: n.Stmt) -> str:
    match s:
        case n.ProducerConsumer(name=name) | n.Realize(name=name):
            return f"the computation of {name} (computed inside them)"
        case n.Atomic():
            return "an atomic update (an intrinsic call can't be made atomic)"
        case n.IfThenElse():
            return "a choice between two loop nests"
        case n.For(name=name):
            return f"more loops ({name})"
    return type(s).__name__


def _spec_definition(intrinsic, site: _Site, what: str):
    """(part, the spec's definition) that stage `site.stage` stands for."""
    definitions = intrinsic.spec.definitions
    if site.stage > 0:
        if len(definitions) < 2:
            raise ScheduleError(f"{what}: {site.where} is an update, but the spec "
                                f"{intrinsic.spec.name} of {intrinsic.name} has no update; "
                                "tensorize a pure stage with it")
        return "update", definitions[1]
    return ("init" if len(definitions) > 1 else "emit"), definitions[0]


def _spec_loops(intrinsic, definition) -> list[tuple[str, n.Expr, int]]:
    """The spec's loops for `definition`, outermost first: (name, min, extent)."""
    loops = []
    for v in intrinsic.spec.args:
        lo, extent = intrinsic.spec.schedule.bounds[v.name]
        loops.append((v.name, lo, extent.value))
    if definition.rdom is not None:
        loops += [(r.name, r.min.node, r.extent.node.value) for r in definition.rdom.rvars]
    return loops


def _check_loops(nest: _Nest, site: _Site, spec_loops, what: str) -> list[n.For]:
    """The nest's loops standing for the spec's, checked: depth, kind, extent."""
    depth = len(spec_loops)
    spec_names = ", ".join(x[0] for x in spec_loops)
    if len(site.inner) != depth:
        raise ScheduleError(f"{what}: the spec's loop nest is {depth} deep ({spec_names}), "
                            f"but the loops from {site.record.var} inward are now "
                            f"{len(site.inner)} ({', '.join(site.inner)}): a split, fuse or "
                            "reorder after tensorize changed them")
    loops = nest.loops[:depth]
    if len(loops) < depth:
        raise ScheduleError(f"{what}: the spec has {depth} loops ({spec_names}), but only "
                            f"{len(loops)} loops from {site.record.var} inward are tight "
                            f"around one definition ({', '.join(site.inner[:len(loops)])}); "
                            f"the next one holds {_describe(nest.leaf)}")
    if len(nest.loops) > depth:
        nest.leaf = nest.loops[depth]
    for x, (name, _, extent), user in zip(loops, spec_loops, site.inner, strict=True):
        if x.kind is not n.ForKind.SERIAL:
            raise ScheduleError(f"{what}: loop {user} is {x.kind.value}; the loops an "
                                "intrinsic replaces must be serial (it decides how they run)")
        if not (isinstance(x.extent, n.Const) and x.extent.value == extent):
            raise ScheduleError(
                f"{what}: loop {user} has extent {expr_to_str(x.extent)}, but the spec's "
                f"loop {name} has extent {extent}; split {user} by {extent} (a tail is "
                "guarded or shifted by the split's tail strategy)")
    return loops


def _shifted(loop: n.For, spec_min: n.Expr) -> n.Expr:
    """The nest's loop variable where the spec has its own: `x - loop.min + spec_min`."""
    var = n.Var(loop.name)
    if loop.min == spec_min:
        return var
    return simplify(n.Add(n.Sub(var, loop.min), spec_min))



# ------------------------------------------------------------------------- the proof


class _Mismatch(Exception):  # noqa: N818 (a result of the proof, not an error of halo's)
    def __init__(self, expected: n.Expr, found: n.Expr, why: str = ""):
        super().__init__(why)
        self.expected, self.found, self.why = expected, found, why


def _is_zero(e: n.Expr) -> bool:
    e = simplify(e)
    return isinstance(e, n.Const) and e.value == 0


class _Matcher:
    """Matches the spec's definition against the nest's Provide, node for node, building
    the map of buffers and each buffer's origin (its coordinates at the spec's zero)."""

    def __init__(self, spec: str, spec_type: Type, spec_values: dict[str, n.Expr],
                 inner: set[str]):
        self.spec = spec
        self.spec_type = spec_type
        self.spec_values = spec_values  # spec loop variable -> the nest's expression
        self.inner = inner  # the nest's loop variables
        self.buffers: dict[str, str] = {}  # spec buffer -> nest buffer
        self.origins: dict[str, tuple[n.Expr, ...]] = {}
        self.types: dict[str, tuple[Type, n.CallKind]] = {}
        self.output = ""

    def provide(self, definition, p: n.Provide) -> None:
        self.output = p.name
        spec_call = n.Call(self.spec_type, self.spec, definition.args, n.CallKind.FUNC)
        self.access(spec_call, n.Call(spec_call.type, p.name, p.args, n.CallKind.FUNC))
        self.expr(definition.value, p.value)

    def expr(self, e: n.Expr, f: n.Expr) -> None:
        if isinstance(e, n.Call) and e.kind in _BUFFERS:
            if not (isinstance(f, n.Call) and f.kind in _BUFFERS):
                raise _Mismatch(e, f, "a buffer access against something else")
            self.access(e, f)
            return
        if isinstance(e, n.Var) and e.name in self.spec_values:
            if not (f.type == e.type and _is_zero(n.Sub(f, self.spec_values[e.name]))):
                raise _Mismatch(e, f, "the loop variables differ")
            return
        if type(e) is not type(f) or e.type != f.type:
            raise _Mismatch(e, f, self._types(e, f))
        if isinstance(e, (n.Var, n.Const)):
            if e != f:
                raise _Mismatch(e, f)
            return
        if isinstance(e, n.Call) and (e.name, len(e.args)) != (f.name, len(f.args)):
            raise _Mismatch(e, f)
        ek, fk = child_nodes(e), child_nodes(f)
        if len(ek) != len(fk):
            raise _Mismatch(e, f)
        if isinstance(e, _COMMUTATIVE):
            self._either_order(e, f)
            return
        for a, b in zip(ek, fk, strict=True):
            self.expr(a, b)

    def _either_order(self, e: n.BinaryOp, f: n.BinaryOp) -> None:
        saved = (dict(self.buffers), dict(self.origins), dict(self.types))
        try:
            self.expr(e.a, f.a)
            self.expr(e.b, f.b)
        except _Mismatch as first:
            self.buffers, self.origins, self.types = (dict(x) for x in saved)
            try:
                self.expr(e.a, f.b)
                self.expr(e.b, f.a)
            except _Mismatch:
                self.buffers, self.origins, self.types = (dict(x) for x in saved)
                raise first from None

    @staticmethod
    def _types(e: n.Expr, f: n.Expr) -> str:
        return f"types {e.type} and {f.type}" if e.type != f.type else ""

    def access(self, e: n.Call, f: n.Call) -> None:
        """A spec buffer access `e` against the nest's `f`: the same buffer as before,
        of the same type, at coordinates translated by the same offsets."""
        if e.type != f.type:
            raise _Mismatch(e, f, self._types(e, f))
        known = self.buffers.get(e.name)
        if known is None:
            if (e.name == self.spec) != (f.name == self.output):
                raise _Mismatch(e, f, f"the spec's {'output' if e.name == self.spec else 'input'}"
                                      f" {e.name} can't stand for "
                                      f"{'the output' if f.name == self.output else 'input'} "
                                      f"{f.name}")
            self.buffers[e.name] = f.name
            self.types[e.name] = (f.type, f.kind)
        elif known != f.name:
            raise _Mismatch(e, f, f"{e.name} stands for {known} elsewhere")
        rank, dims = len(e.args), len(f.args)
        if dims < rank:
            raise _Mismatch(e, f, f"{f.name} has {dims} dimensions, the spec's {e.name} {rank}")
        for k, c in enumerate(f.args[:dims - rank]):
            if var_names(c) & self.inner:
                raise _Mismatch(e, f, f"dimension {k} of {f.name} varies inside the loops, "
                                      f"and the spec's {e.name} has no such dimension")
        offsets = []
        for ec, fc in zip(e.args, f.args[dims - rank:], strict=True):
            offset = simplify(n.Sub(fc, substitute(ec, self.spec_values)))
            if var_names(offset) & self.inner:
                raise _Mismatch(ec, fc, f"a coordinate of {e.name} against one of {f.name}")
            offsets.append(offset)
        origin = (*f.args[:dims - rank], *offsets)
        before = self.origins.get(e.name)
        if before is None:
            self.origins[e.name] = origin
        elif not all(_is_zero(n.Sub(a, b)) for a, b in zip(before, origin, strict=True)):
            raise _Mismatch(e, f, f"{f.name} is read at another offset elsewhere")

    def operand_order(self, definition) -> list[str]:
        """The spec's buffers: its output, then its inputs as its definition reads them."""
        names = [self.spec]
        for x in walk(definition.value):
            if isinstance(x, n.Call) and x.kind in _BUFFERS and x.name not in names:
                names.append(x.name)
        return names

    def origin_call(self, spec_name: str) -> n.Call:
        t, kind = self.types[spec_name]
        return n.Call(t, self.buffers[spec_name], self.origins[spec_name], kind)


# ---------------------------------------------------------------------- tail guards


def _conjuncts(e: n.Expr) -> list[n.Expr]:
    if n.is_whole_tiles(e):
        return _conjuncts(e.args[0])
    if isinstance(e, n.And) and e.type.is_bool:
        return [*_conjuncts(e.a), *_conjuncts(e.b)]
    return [e]


def _learn(fact: n.Expr, ranges: dict[str, tuple[int, int]]) -> None:
    """Narrows `ranges` by `fact` where it bounds a variable by a constant."""
    match fact:
        case n.LE(a=n.Var(name=v), b=n.Const(value=c)) | n.LT(a=n.Var(name=v), b=n.Const(
                value=c)) if fact.a.type.is_integer:
            hi = int(c) - (1 if isinstance(fact, n.LT) else 0)
            lo, old = ranges.get(v, type_bounds(fact.a.type))
            ranges[v] = (lo, min(old, hi))
        case n.LE(a=n.Const(value=c), b=n.Var(name=v)) | n.LT(a=n.Const(value=c), b=n.Var(
                name=v)) if fact.b.type.is_integer:
            lo = int(c) + (1 if isinstance(fact, n.LT) else 0)
            old, hi = ranges.get(v, type_bounds(fact.b.type))
            ranges[v] = (max(old, lo), hi)


def _whole_tile(guard: n.Expr, loops: list[n.For], what: str) -> n.Expr:
    """A condition over the enclosing loops that holds when `guard` holds at every
    point of the nest."""
    guard = simplify(guard)
    inner = {x.name for x in loops}
    if not var_names(guard) & inner:
        return guard
    match guard:
        case n.And(a=a, b=b) if guard.type.is_bool:
            return n.And(_whole_tile(a, loops, what), _whole_tile(b, loops, what))
        case n.LT(a=a, b=b) | n.LE(a=a, b=b) if a.type.is_integer and a.type.lanes == 1:
            most = _largest(n.Sub(a, b), loops)
            if most is not None:
                return type(guard)(most, const(0, a.type))
    raise ScheduleError(f"{what}: the guard {expr_to_str(guard)} inside the tensorized loops "
                        "is not linear in them, so halo can't tell which tiles are whole; "
                        "make the extents multiples of the intrinsic's or split with "
                        "tail='shift_inwards'")


def _largest(d: n.Expr, loops: list[n.For]) -> n.Expr | None:
    """The largest value of `d` over the nest if it is linear in the loop variables with
    constant coefficients, else None."""
    at_min = {x.name: x.min for x in loops}
    base = simplify(substitute(d, at_min))
    linear: n.Expr = base
    most: n.Expr = base
    for x in loops:
        step = simplify(n.Sub(substitute(d, {**at_min, x.name: n.Add(x.min, const(1))}), base))
        if not isinstance(step, n.Const):
            return None
        linear = n.Add(linear, n.Mul(step, n.Sub(n.Var(x.name), x.min)))
        if step.value > 0:
            most = n.Add(most, const(step.value * (x.extent.value - 1)))
    if not _is_zero(n.Sub(d, linear)):
        return None
    return simplify(most)
