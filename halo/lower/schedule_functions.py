"""Turn schedule records into loop nests and place each Func at its compute and store
levels.

Input: the pipeline's Funcs and their schedules (`ctx.compute_levels` decided). Output: a
Stmt in which every output has its `ProducerConsumer` at root (in realization order, so
an output that another Func reads is produced first), every other non-inlined Func `f`
has `ProducerConsumer(f, produce, consume)` at the top of the body of its compute loop (or
at root) and `Realize(f)` around its store loop's body, and calls of inlined Funcs are
substituted. A Func stored and computed at a loop whose consumer's guarded tails are
decided there (the guarded variable depends on no loop inside) is placed under those
guards, `if guard: Realize(f, ProducerConsumer(f, ...))`. Loop variables are named
`f.s{stage}.{var}` for a stage's own dimensions and `{split var}.{new name}` for loops
made by splits (Halide's convention), so every name is unique. Loop bounds of pure
dimensions refer to `f.s{k}.{v}.min` / `.max`, which `bounds_inference` defines. The
Provide of a stage scheduled `atomic()` is wrapped in `Atomic`. Inside a branch of a
consumer's specialization, a producer specialized on the same condition keeps only the
branch that condition takes there.
"""
from __future__ import annotations

from functools import reduce
from typing import NamedTuple

from halo.analysis.loops import (
    Fuse,
    LoopRange,
    Split,
    TailStrategy,
    divides,
    fused_values,
    ranges_after,
    split_value,
)
from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.nodes import block, const
from halo.ir.substitute import substitute, var_names, without_promises
from halo.ir.visitor import IRMutator, child_nodes, walk
from halo.lang.func import Definition
from halo.lower.context import LowerContext
from halo.lower.inline import inline_calls
from halo.schedule.records import LoopLevel, PlacementKind, StageSchedule, stage_label
from halo.target import TargetKind


def schedule_functions(_: n.Stmt | None, ctx: LowerContext) -> n.Stmt:
    # Consumers first, so the loops a producer is placed in already exist; each producer
    # then wraps what reads it.
    stmt: n.Stmt = n.NO_OP
    for name in reversed(ctx.env.funcs):
        if name in ctx.outputs:
            stmt = n.ProducerConsumer(name, _produce(name, ctx), stmt)
        elif ctx.compute_levels[name].kind is not PlacementKind.INLINE:
            stmt = _inject(stmt, name, ctx)
    conditions = {spec.condition.node for f in ctx.env.funcs.values()
                  for stage in f.schedule.stages for spec in stage.specializations}
    return _DecideSpecializations(conditions).mutate(stmt) if conditions else stmt


class _DecideSpecializations(IRMutator):
    """A producer computed inside a branch of its consumer's specialization, specialized
    on the same condition, takes the branch that condition decides there: its other
    branches are dead code, and they could have refused what the live one allows (a
    block's registers tiled one way in one branch, another way in the other). The
    conditions are over Params and input extents, which no loop or let rebinds."""

    def __init__(self, conditions: set[n.Expr]):
        self.conditions = conditions
        self.known: dict[n.Expr, bool] = {}

    def visit_IfThenElse(self, s: n.IfThenElse) -> n.Stmt:
        c = s.condition
        if c in self.known:
            taken = s.then_case if self.known[c] else s.else_case
            return n.NO_OP if taken is None else self.mutate(taken)
        if c not in self.conditions:
            return self.mutate_children(s)
        try:
            self.known[c] = True
            then_case = self.mutate(s.then_case)
            self.known[c] = False
            else_case = None if s.else_case is None else self.mutate(s.else_case)
        finally:
            del self.known[c]
        return n.IfThenElse(c, then_case, else_case)


# ------------------------------------------------------------------ one Func's loops


def _produce(name: str, ctx: LowerContext) -> n.Stmt:
    f = ctx.env.funcs[name]
    stages = [_specialized_loops(name, k, d, f.schedule.stages[k], ctx)
              for k, d in enumerate(f.definitions)]
    return inline_calls(block(*stages), ctx, name)


def _specialized_loops(func: str, k: int, definition: Definition, sched: StageSchedule,
                       ctx: LowerContext) -> n.Stmt:
    """The loops of stage k, one nest per specialization chosen by its condition (in
    order), the default schedule last. All nests cover the same region (the bounds lets
    of the stage are shared), so bounds inference needs nothing new. Producers can be
    computed at a loop only if every nest has it under the same IR name."""
    nest = _tiled_loops(func, k, definition, sched, ctx)
    names = ctx.loop_names[(func, k)]
    for spec in reversed(sched.specializations):
        branch = _tiled_loops(func, k, definition, spec.schedule, ctx)
        names = {v: ir for v, ir in names.items() if ctx.loop_names[(func, k)].get(v) == ir}
        branch = substitute(branch, _known_values(spec.condition.node))
        nest = n.IfThenElse(spec.condition.node, branch, nest)
    ctx.loop_names[(func, k)] = names
    return nest


def _tiled_loops(func: str, k: int, definition: Definition, sched: StageSchedule,
                 ctx: LowerContext) -> n.Stmt:
    """The loops of one schedule of stage k, and a whole-tile version where it pays.

    A shift_inwards split of an extent that may be smaller than its factor clamps its
    variable into range (and guards it), so what a producer computed inside the split's
    loops must cover is clamped too: `min(t + 3, n - 1) - max(t, 0) + 1` rows rather than
    4, and the producer's loops can't be unrolled or vectorized, nor its tile kept in
    registers. So when producers are computed inside the stage, a second nest, taken when
    every such extent is at least its factor, recovers the variables unclamped (`t + i`:
    every tile is whole), as Halide does; the clamped nest remains for small extents.

    Region analysis outside the choice reads the clamped nest only (boxes.py), which is
    sound while both nests touch the same points. A round_up split, in the stage or in a
    Func computed inside it, computes past a region by an amount that depends on the
    region's shape (whole tiles or the clamped one), so then there is one nest."""
    nest, short = _stage_loops(func, k, definition, sched, ctx)
    inside = _computed_inside(func, k, ctx)
    if not short or not inside or any(_rounds_up(g, ctx) for g in [func, *inside]):
        return nest
    whole, _ = _stage_loops(func, k, definition, sched, ctx, whole_tiles=True)
    return n.IfThenElse(n.whole_tiles(reduce(n.And, short)), whole, nest)


def _computed_inside(func: str, k: int, ctx: LowerContext) -> list[str]:
    """The Funcs computed at a loop of stage k of `func`, and those computed inside them."""
    inside = [g for g, level in ctx.compute_levels.items()
              if level.kind is PlacementKind.AT and (level.func, level.stage) == (func, k)]
    for g in list(inside):
        for stage in range(len(ctx.env.funcs[g].definitions)):
            inside += _computed_inside(g, stage, ctx)
    return inside


def _rounds_up(name: str, ctx: LowerContext) -> bool:
    """Whether a stage of Func `name`, in any specialization, has a round_up split."""
    return any(isinstance(t, Split) and t.tail is TailStrategy.ROUND_UP
               for stage in ctx.env.funcs[name].schedule.stages
               for sched in stage.variants() for t in sched.transforms)


def _stage_loops(func: str, k: int, definition: Definition, sched: StageSchedule,
                 ctx: LowerContext, whole_tiles: bool = False) -> tuple[n.Stmt, list[n.Expr]]:
    """The loop nest of stage k of `func`: loops from `sched.dims`, the original
    variables recovered by lets from the split/fused loops, tail guards, and the Provide;
    and the conditions `factor <= extent` of its shift_inwards splits whose extent may be
    smaller than the factor. whole_tiles: assume those conditions hold."""
    prefix = ctx.stage_prefix(func, k)
    rvars = {r.name: r for r in (definition.rdom.rvars if definition.rdom else ())}
    ir_name: dict[str, str] = {}
    ranges: dict[str, LoopRange] = {}  # the stage's loop names -> their ranges
    for d in _initial_dims(definition, sched):
        var = prefix + d
        ir_name[d] = var
        if d in rvars:
            r = rvars[d]
            ranges[d] = LoopRange(r.min.node, r.extent.node)
        else:
            lo, hi = n.Var(var + ".min"), n.Var(var + ".max")
            ranges[d] = LoopRange(lo, n.Add(n.Sub(hi, lo), const(1)))

    lets: list[_Let] = []
    short: list[n.Expr] = []
    made = set(ir_name.values())  # every IR name of this stage (a loop name may be reused)
    for t in sched.transforms:  # (a Reorder only moved loops: sched.dims has the result)
        if isinstance(t, Split):
            lets.append(_split_let(t, ir_name, ranges[t.old], k, short, whole_tiles,
                                   ctx.target.kind is TargetKind.CUDA))
        elif isinstance(t, Fuse):
            lets += _fuse_lets(t, prefix, ir_name, ranges[t.outer], ranges[t.inner], made)
        made |= set(ir_name.values())
        ranges = ranges_after(t, ranges)
    lets = _drop_broken_promises(lets)

    replace = {v: n.Var(prefix + v) for v in [*definition.pure_var_names(), *rvars]}
    args = tuple(substitute(a, replace) for a in definition.args)
    value = substitute(definition.value, replace)
    body: n.Stmt = n.Provide(func, value, args)
    if sched.atomic:
        body = n.Atomic(body)
    rdom = definition.rdom
    if rdom is not None and rdom.predicate is not None:
        body = n.IfThenElse(substitute(rdom.predicate.node, replace), body)
    # A later transformation defines the variables an earlier one's let reads, so the
    # earliest let is innermost. Each tail guard sits right inside the let it tests, so
    # the lets inside it (and bounds inference) see the guarded range.
    for name, value, guard, _ in lets:
        if guard is not None:
            body = n.IfThenElse(guard, body)
        body = n.LetStmt(name, value, body)
    for d in reversed(sched.dims):
        var = ir_name[d.name]
        lo, extent = ranges[d.name]
        body = n.For(var, lo, extent, d.kind, body)
        ctx.loop_labels[var] = f"{stage_label(func, k)} loop {d.name}"
        ctx.loop_owners[var] = (func, stage_label(func, k), d.name)
    ctx.loop_names[(func, k)] = ir_name
    return body, short


def _known_values(condition: n.Expr) -> dict[str, n.Expr]:
    """The values a specialization's condition pins down (`p == 3`, `inp.extent.1 == 8`,
    a bool Param, joined by &), substituted into its branch so that, e.g., a reduction
    over a pinned extent has a constant loop that can be unrolled."""
    match condition:
        case n.And(a=a, b=b) if condition.type.is_bool:
            return {**_known_values(a), **_known_values(b)}
        case n.EQ(a=n.Var(name=name), b=n.Const() as value) | \
                n.EQ(a=n.Const() as value, b=n.Var(name=name)):
            return {name: value}
        case n.Var(name=name) if condition.type.is_bool:
            return {name: n.const(True, condition.type)}
    return {}


class _Let(NamedTuple):
    """A variable rebuilt from split or fused loops: its value, the tail guard that must
    hold for the point to be computed, and whether it may leave its range (a round_up
    split computes past the end)."""
    name: str
    value: n.Expr
    guard: n.Expr | None = None
    overflows: bool = False


def _drop_broken_promises(lets: list[_Let]) -> list[_Let]:
    """A variable rebuilt from one that may leave its range (a round_up split's, or one
    rebuilt from such a variable) may leave its own range too, so its let can't just
    promise one: it clamps into it instead. round_up is only allowed on pure stages,
    where computing a clamped point again changes nothing."""
    overflowing = {let.name for let in lets if let.overflows}
    out = list(lets)
    changed = True
    while changed:
        changed = False
        for k, let in enumerate(out):
            if let.name not in overflowing and var_names(let.value) & overflowing:
                overflowing.add(let.name)
                out[k] = let._replace(value=_clamped(let.value), overflows=True)
                changed = True
    return out


def _clamped(value: n.Expr) -> n.Expr:
    """promise_clamped(v, lo, hi) made real: min(max(v, lo), hi)."""
    match value:
        case n.Call(name="promise_clamped", args=(inner, lo, hi, *_)):
            return n.Min(n.Max(inner, lo), hi)
    return value


def _initial_dims(definition: Definition, sched: StageSchedule) -> list[str]:
    """The stage's dimensions before any transformation, outermost first."""
    rvars = [r.name for r in definition.rdom.rvars] if definition.rdom else []
    return [*definition.pure_var_names(), *rvars]


def _split_let(t: Split, ir_name: dict[str, str], old_range: LoopRange, k: int,
               short: list[n.Expr], whole_tiles: bool, gpu: bool) -> _Let:
    """The let that rebuilds the variable split by `t` (over `old_range`) from its two
    loops, which it names in `ir_name`. gpu: a shift_inwards split of an extent smaller
    than its factor starts at the min and guards its end."""
    old = ir_name.pop(t.old)
    outer, inner = f"{old}.{t.outer}", f"{old}.{t.inner}"
    ir_name[t.outer], ir_name[t.inner] = outer, inner
    lo, extent = old_range
    tail = t.tail_in(pure_stage=k == 0)
    value = split_value(old_range, n.Var(outer), n.Var(inner), t.factor, tail)
    whole = divides(old_range, t.factor)
    if tail is TailStrategy.SHIFT_INWARDS:
        # only an extent smaller than the factor shifts below lo
        needs_guard = not whole and not (isinstance(extent, n.Const)
                                         and extent.value >= t.factor)
        if needs_guard:
            short.append(n.LE(const(t.factor), extent))
        if needs_guard and whole_tiles:
            return _Let(old, value)
        if needs_guard and gpu:
            # On a GPU it doesn't shift: its one tile starts at lo and guards its end,
            # as a guard split does, so a Func computed in the consumer's blocks in
            # registers (block_registers) sees each thread at the points its consumer's
            # thread reads. (On the host, sliding windows rely on the shifted form.)
            start = n.Max(n.Min(n.Mul(n.Var(outer), const(t.factor)),
                                n.Sub(extent, const(t.factor))), const(0))
            return _Let(old, n.promise_clamped(n.Add(n.Add(lo, start), n.Var(inner)), lo,
                                               old_range.max, guarded=True),
                        n.LT(n.Var(inner), extent))
        return _Let(old, n.promise_clamped(value, lo, old_range.max),
                    n.LE(lo, n.Var(old)) if needs_guard else None)
    if tail is TailStrategy.GUARD:
        return _Let(old, n.promise_clamped(value, lo, old_range.max, guarded=not whole),
                    n.LT(n.Var(old), old_range.end) if not whole else None)
    # round_up computes past the end on purpose: no promise
    return _Let(old, value, overflows=not whole)


def _fuse_lets(t: Fuse, prefix: str, ir_name: dict[str, str], outer_range: LoopRange,
               inner_range: LoopRange, made: set[str]) -> list[_Let]:
    """The lets that rebuild the variables fused by `t` from the fused loop, which it
    names in `ir_name` (apart from the IR names `made` before: `fuse(yo, xo, y)` after
    y was split names a new loop y)."""
    outer, inner = ir_name.pop(t.outer), ir_name.pop(t.inner)
    fused = prefix + t.fused if prefix + t.fused not in made else f"{outer}.{t.fused}"
    ir_name[t.fused] = fused
    outer_value, inner_value = fused_values(n.Var(fused), outer_range, inner_range)
    # Both results are in range by construction; the promises show bounds inference the
    # ranges, which a symbolic division hides.
    return [_Let(inner, n.promise_clamped(inner_value, inner_range.min, inner_range.max)),
            _Let(outer, n.promise_clamped(outer_value, outer_range.min, outer_range.max))]


# --------------------------------------------------------------------- injection


def _inject(stmt: n.Stmt, name: str, ctx: LowerContext) -> n.Stmt:
    """Place `name`'s produce at its compute level and its Realize at its store level."""
    compute = _loop_var(name, ctx.compute_levels[name], "compute_at", ctx)
    store = _loop_var(name, ctx.store_levels[name], "store_at", ctx)
    sites = _legal_sites(stmt, name)
    if compute is not None and compute not in sites:
        raise _placement_error(name, "compute_at", ctx.compute_levels[name], sites, ctx)
    if store is not None and store not in sites:
        raise _placement_error(name, "store_at", ctx.store_levels[name], sites, ctx)
    if store is not None and compute is not None and \
            not _store_outside_compute(stmt, name, store, compute):
        raise ScheduleError(
            f"{name}.store_at({ctx.loop_labels[store]}) is inside {name}.compute_at("
            f"{ctx.loop_labels[compute]}): storage must be at or outside the compute level")
    if store is not None and compute is None:
        raise ScheduleError(f"{name}.store_at({ctx.loop_labels[store]}) with "
                            f"{name} computed at root: store_at must enclose the compute "
                            "level; use compute_at inside that loop too")

    f = ctx.env.funcs[name]
    produce = _produce(name, ctx)
    consumer = ctx.compute_levels[name].func

    def place(body: n.Stmt, at_compute: bool, at_store: bool) -> n.Stmt:
        # (a Func stored further out may slide along the loops in between, which a
        # condition at its compute level would stop)
        guard = _decided_guard(body, consumer) if at_compute and at_store else None
        if at_compute:
            body = n.ProducerConsumer(name, produce, body)
        if at_store:  # bounds_inference fills in the bounds
            body = n.Realize(name, f.type, (), body, f.schedule.memory_scope.value)
        return body if guard is None else n.IfThenElse(guard, body)

    if compute is None:  # both at root
        return place(stmt, True, True)

    class _Place(IRMutator):
        def visit_For(self, loop: n.For) -> n.Stmt:
            body = self.mutate(loop.body)
            body = place(body, loop.name == compute, loop.name == store)
            return loop if body is loop.body else \
                n.For(loop.name, loop.min, loop.extent, loop.kind, body)

    out = _Place().mutate(stmt)
    return out if store is not None else place(out, False, True)


def _decided_guard(body: n.Stmt, consumer: str) -> n.Expr | None:
    """The guards of guarded tails on the way from the top of a compute loop's `body` to
    `consumer`'s Provide that no loop inside `body` changes, as one condition; None if
    there are none. Where it fails nothing in the body runs, so neither must a producer
    computed there: bounds inference gives it the guarded variable clamped into range,
    a point that the producers it reads, computed further out, may not cover (their
    regions take the loops' range intersected with the promised one: when loops are
    reordered, a whole iteration outside may lie past the end)."""
    paths: list[list[n.Stmt]] = []

    def visit(s: n.Stmt, path: list[n.Stmt]) -> None:
        match s:
            case n.Provide(name=name) if name == consumer:
                paths.append(path)
            case n.ProducerConsumer():
                visit(s.consume, path)
            case n.IfThenElse(else_case=None) | n.LetStmt() | n.For():
                visit(s.then_case if isinstance(s, n.IfThenElse) else s.body, [*path, s])
            case n.Realize() | n.Atomic():
                visit(s.body, path)
            case n.Block() | n.IfThenElse():
                for child in child_nodes(s):
                    if isinstance(child, n.Stmt):
                        visit(child, [*path, None])
    visit(body, [])
    if len(paths) != 1:
        return None
    values: dict[str, n.Expr] = {}
    inside: set[str] = set()
    decided: list[n.Expr] = []
    above: n.Stmt | None = None
    for s in paths[0]:
        if s is None:  # (in a branch or a block, conditions further in are local)
            break
        if isinstance(s, n.For):
            inside.add(s.name)
        elif isinstance(s, n.LetStmt):
            values[s.name] = substitute(without_promises(s.value), values)
        elif isinstance(above, n.LetStmt) and n.is_guarded_promise(above.value):
            condition = substitute(without_promises(s.condition), values)
            if not var_names(condition) & inside:
                decided.append(condition)
        above = s
    return reduce(n.And, decided) if decided else None


def _loop_var(name: str, level: LoopLevel, call: str, ctx: LowerContext) -> str | None:
    """The IR loop variable of a placement, or None for root."""
    if level.kind is not PlacementKind.AT:
        return None
    consumer = level.func
    stage = level.stage
    if consumer not in ctx.env.funcs:
        raise ScheduleError(f"{name}.{call}({consumer}, {level.var}): {consumer} is not part "
                            f"of this pipeline; {name} is used by "
                            f"{', '.join(ctx.env.consumers(name)) or 'nothing'}")
    if ctx.compute_levels[consumer].kind is PlacementKind.INLINE:
        raise ScheduleError(f"{name}.{call}({consumer}, {level.var}): {consumer} is computed "
                            f"inline, so it has no loop {level.var}; schedule {consumer} with "
                            "compute_root() or compute_at(...) first")
    names = ctx.loop_names.get((consumer, stage))
    if names is None:
        raise ScheduleError(f"{name}.{call}({consumer}, {level.var}): {consumer} has no "
                            f"stage {stage}")
    if level.var not in names:
        if ctx.env.funcs[consumer].schedule.stages[stage].specializations:
            raise ScheduleError(
                f"{name}.{call}({consumer}, {level.var}): {consumer} is specialized, and not "
                f"all of its schedules have loop '{level.var}' (from the same splits); "
                f"{name} must be placed at a loop every branch has, or at root. The loops "
                f"all of them share are: {', '.join(names) or '(none)'}")
        definitions = ctx.env.funcs[consumer].definitions
        stages = sorted((k for k in range(len(definitions))
                         if level.var in ctx.loop_names.get((consumer, k), ())),
                        key=lambda k: name not in {getattr(d, "name", None)
                                                   for d in definitions[k].deps})
        where = "".join(
            f"; loop '{level.var}' is in {stage_label(consumer, k)}: write "
            f"{name}.{call}({stage_label(consumer, k)}, {level.var})" for k in stages[:1])
        raise ScheduleError(f"{name}.{call}({stage_label(consumer, stage)}, {level.var}): "
                            f"{stage_label(consumer, stage)} has no loop named "
                            f"'{level.var}'{where}; its loops are, outermost first: "
                            f"{', '.join(names)}")
    return names[level.var]


def _legal_sites(stmt: n.Stmt, name: str) -> list[str]:
    """IR loops enclosing every use of `name`, outermost first (as the first use sees
    them). Without specializations these are the common prefix of the uses' loop paths;
    the branches of a specialized stage may nest loops of the same name differently, and
    a loop that every use is inside still works, with a produce in each branch."""
    paths = _use_paths(stmt, name)
    if not paths:
        return []
    return [loop for loop in paths[0] if all(loop in p for p in paths[1:])]


def _store_outside_compute(stmt: n.Stmt, name: str, store: str, compute: str) -> bool:
    """Whether, for every use of `name`, the store loop encloses the compute loop."""
    return all(p.index(store) <= p.index(compute) for p in _use_paths(stmt, name))


def _use_paths(stmt: n.Stmt, name: str) -> list[list[str]]:
    """For each statement or loop bound that uses `name`, its enclosing IR loops,
    outermost first."""
    paths: list[list[str]] = []

    def visit(s, loops: list[str]) -> None:
        if isinstance(s, n.For):
            if any(isinstance(x, n.Call) and x.name == name
                   for x in (*walk(s.min), *walk(s.extent))):
                paths.append(list(loops))
            visit(s.body, [*loops, s.name])
            return
        if isinstance(s, n.Expr):
            if any(isinstance(x, n.Call) and x.name == name for x in walk(s)):
                paths.append(list(loops))
            return
        for field in getattr(s, "__dataclass_fields__", {}):
            child = getattr(s, field)
            if isinstance(child, (n.Stmt, n.Expr)):
                visit(child, loops)
            elif isinstance(child, tuple):
                for c in child:
                    for x in (c if isinstance(c, tuple) else (c,)):
                        if isinstance(x, (n.Stmt, n.Expr)):
                            visit(x, loops)

    visit(stmt, [])
    return paths


def _placement_error(name: str, call: str, level: LoopLevel, sites: list[str],
                     ctx: LowerContext) -> ScheduleError:
    legal = ["root", *(ctx.loop_labels[s] for s in sites)]
    users = ctx.env.consumers(name)
    return ScheduleError(
        f"{name}.{call}({level.func}, {level.var}): loop {level.var} of {level.func} does "
        f"not enclose every use of {name} (used by {', '.join(users) or 'nothing'}). "
        f"Legal levels, outermost first: {'; '.join(legal)}")
