"""Bounds inference: define every loop bound and allocation size from what is used.

Input: the Stmt from `schedule_functions` (loop bounds of pure dimensions refer to the
undefined names `f.s{k}.{v}.min` / `.max`; Realize nodes have no bounds). Output: the same
Stmt with
  * at the top, for each output `o` (whose region is the output buffer, `o.min.{i}` /
    `o.extent.{i}`), lets for its stages' bounds;
  * around the loop level where f is computed, lets for the bounds of f's stages (a
    consumer's outside its producers', so theirs can name it): updates cover
    the region that the consume part reads (as intervals over the loops inside the
    compute level); the pure stage also covers everything the updates write or read;
    `f.bound(...)` overrides a dimension;
  * around each `Realize(f)`, lets `f.min.{i}` / `f.extent.{i}` for the box that f's
    stages write and its consumers read inside the store level, used as its bounds.
It also records in `ctx.checks` the region of every input read and every output written,
to be checked against the arrays before the code runs, and removes the `promise_clamped`
hints that schedule_functions left for it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from halo.analysis.boxes import Access, AccessedNames, boxes_touched, boxes_touched_each
from halo.analysis.interval import Interval
from halo.analysis.loops import Split, TailStrategy, sources_after
from halo.analysis.simplify import Simplifier
from halo.errors import BoundsError, InternalError
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.printer import expr_to_str
from halo.ir.substitute import substitute
from halo.ir.visitor import IRMutator, rewrite, walk
from halo.lower.context import LowerContext
from halo.schedule.records import PlacementKind


@dataclass(frozen=True)
class RegionCheck:
    """Before running: the range [lo, hi] that dimension `dim` of `name` is accessed in
    must lie inside [min, min + extent). `what` is "input", "output", "bound", or
    "whole tiles" (a schedule that needs its tiles whole: `why` says which and why)."""
    name: str
    dim: int
    lo: n.Expr
    hi: n.Expr
    min: n.Expr
    extent: n.Expr
    what: str
    when: n.Expr | None = None  # checked only when this holds (a specialization's branch)
    why: str = ""


def bounds_inference(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    # One simplifier for the pass (and the later simplify passes): its regions repeat
    # the same expressions, and its memos save most of the work
    # (benchmarks/compile_time.py).
    simplifier = ctx.simplifier
    loop_variables = frozenset(s.name for s in walk(stmt) if isinstance(s, n.LetStmt)
                               and n.is_promise(s.value))
    # Likewise, which subtrees touch a Func is asked of the same subtrees for each Func.
    accessed = AccessedNames()
    for name in reversed(ctx.realized()):  # consumers first: their lets end up outside
        stmt = _AtLevel(name, lambda pc, nm=name: _compute_lets(pc, nm, ctx, simplifier,
                                                                accessed)).at_level(stmt)
        stmt = _At(n.Realize, name, lambda r, nm=name: _storage_lets(
            r, ctx.env.funcs[nm], simplifier, accessed)).mutate(stmt)
    lets: list[tuple[str, n.Expr]] = []
    for name in ctx.outputs:
        f = ctx.env.funcs[name]
        region = _apply_bounds(f, _output_region(f))
        lets += _stage_lets(name, region, region, ctx, simplifier)
    stmt = _wrap(lets, stmt)
    _record_checks(stmt, ctx, simplifier)
    ctx.checks[:] = [_strip_promises(c, loop_variables) for c in ctx.checks]
    return _strip_promises(stmt, loop_variables)


def _strip_promises(node, loop_variables: frozenset[str]):
    """The promises (`promise_clamped`) were for this pass; later ones get plain values,
    except a copy of a guarded promise in a region (anywhere but the let of a loop
    variable, `loop_variables`, which schedule_functions made), which gets the value
    clamped into the promised range. A guarded tail's loop runs past such a promise, and
    a Func computed inside it then covers a point in range, one that the region over the
    whole loop counted (so its producers computed it), while the guard skips the
    consumer. (Where the guard fails at the Func's compute loop for the whole body, as
    when reordered loops put a whole iteration past the end, that point may not be
    counted: schedule_functions computes the Func under the guard there.) `node` is IR
    or a RegionCheck."""
    if isinstance(node, RegionCheck):
        return RegionCheck(node.name, node.dim, *(_strip_promises(e, loop_variables) for e in
                                                  (node.lo, node.hi, node.min, node.extent)),
                           node.what, node.when)

    def strip(x):
        if isinstance(x, n.LetStmt) and x.name in loop_variables and n.is_promise(x.value):
            return n.LetStmt(x.name, _strip_promises(x.value.args[0], loop_variables),
                             _strip_promises(x.body, loop_variables))
        if n.is_promise(x):
            value, lo, hi = (_strip_promises(a, loop_variables) for a in x.args[:3])
            return n.Min(n.Max(value, lo), hi) if n.is_guarded_promise(x) else value
        return None
    return rewrite(node, strip)


class _At(IRMutator):
    """Rewrite the node of class `cls` that belongs to Func `name`."""

    def __init__(self, cls: type, name: str, fn):
        self.cls, self.name, self.fn = cls, name, fn

    def mutate(self, node):
        if isinstance(node, self.cls) and node.name == self.name:
            return self.fn(node)
        if isinstance(node, n.Expr):  # (statements only: an expression holds none)
            return node
        return super().mutate(node)


class _AtLevel(IRMutator):
    """Put the lets `fn(producer_consumer)` returns at the loop level where Func `name` is
    computed (the body of a For, or the root): inside the lets and storage already placed
    there, which belong to its consumers (processed first), and outside every produce
    block of the level. So a producer's bounds can name its consumers' bounds instead of
    repeating their expressions."""

    def __init__(self, name: str, fn):
        self.name, self.fn = name, fn

    def at_level(self, body: n.Stmt) -> n.Stmt:
        pc = _computed_here(body, self.name)
        return self.mutate(body) if pc is None else _insert(body, self.fn(pc))

    def mutate(self, node):
        if isinstance(node, n.Expr):  # (loop levels only: an expression holds none)
            return node
        return super().mutate(node)

    def visit_For(self, loop: n.For) -> n.Stmt:
        body = self.at_level(loop.body)
        return loop if body is loop.body else \
            n.For(loop.name, loop.min, loop.extent, loop.kind, body)


def _insert(body: n.Stmt, lets: list[tuple[str, n.Expr]]) -> n.Stmt:
    """`body` with `lets` placed below its leading LetStmts and Realizes."""
    match body:
        case n.LetStmt(name=name, value=value, body=inner):
            return n.LetStmt(name, value, _insert(inner, lets))
        case n.Realize(name=name, type=t, bounds=bounds, body=inner, scope=scope):
            return n.Realize(name, t, bounds, _insert(inner, lets), scope)
    return _wrap(lets, body)


def _computed_here(stmt: n.Stmt, name: str) -> n.ProducerConsumer | None:
    """The ProducerConsumer of `name` if it is at this loop level (not inside a For; a
    one-armed IfThenElse there is the tail guard schedule_functions put around it)."""
    match stmt:
        case n.ProducerConsumer() if stmt.name == name:
            return stmt
        case n.ProducerConsumer(consume=body) | n.LetStmt(body=body) | n.Realize(body=body) \
                | n.IfThenElse(then_case=body, else_case=None):
            return _computed_here(body, name)
        case n.Block(stmts=stmts):
            return next((pc for s in stmts if (pc := _computed_here(s, name))), None)
    return None


def _wrap(lets: list[tuple[str, n.Expr]], body: n.Stmt) -> n.Stmt:
    for name, value in reversed(lets):
        body = n.LetStmt(name, value, body)
    return body


def _stage_lets(name: str, pure_region, required, ctx: LowerContext,
                simplifier: Simplifier):
    """Lets for the pure dimensions of every stage: updates over `required`, the pure
    stage over `pure_region`. Update lets come first (the pure region may refer to them)."""
    lets: list[tuple[str, n.Expr]] = []
    for k in reversed(range(len(ctx.env.funcs[name].definitions))):
        region = pure_region if k == 0 else required
        for i, prefix in _pure_dims(name, k, ctx):
            lets += [(prefix + ".min", region[i].min),
                     (prefix + ".max", _from_min(prefix + ".min", region[i], simplifier))]
    return lets


def _pure_dims(name: str, k: int, ctx: LowerContext) -> list[tuple[int, str]]:
    """(dimension, name prefix of its bounds' lets) of each pure loop of stage k of
    `name`."""
    f = ctx.env.funcs[name]
    dim_of = {v.name: i for i, v in enumerate(f.args)}
    return [(dim_of[v], ctx.stage_prefix(name, k) + v)
            for v in f.definitions[k].pure_var_names()]


def _update_lets_as(name: str, required, ctx: LowerContext) -> dict[str, n.Expr]:
    """{let: value} of the bounds `_stage_lets` gives the pure loops of `name`'s updates:
    `required`'s."""
    return {prefix + end: getattr(required[i], end[1:])
            for k in range(1, len(ctx.env.funcs[name].definitions))
            for i, prefix in _pure_dims(name, k, ctx) for end in (".min", ".max")}


def _from_min(min_name: str, iv: Interval, simplifier: Simplifier) -> n.Expr:
    """`iv.max`, as `min + c` when the extent is the constant c + 1 (a tile's region), so
    that the simplifier, which substitutes such lets, cancels differences of the two."""
    extent = simplifier.expr(n.Sub(iv.max, iv.min))
    if isinstance(extent, n.Const):
        return n.Add(n.Var(min_name, iv.min.type), extent)
    return iv.max


def _compute_lets(pc: n.ProducerConsumer, name: str, ctx: LowerContext,
                  simplifier: Simplifier, accessed: AccessedNames):
    f = ctx.env.funcs[name]
    required = boxes_touched(pc.consume, name, calls=True, simplifier=simplifier,
                             accessed=accessed)
    if required is None:
        raise InternalError(f"{name} is realized but never read")
    for i, iv in enumerate(required):
        if not iv.is_bounded:
            raise BoundsError(
                f"can't bound the region of {name} read by {', '.join(ctx.env.consumers(name))}"
                f" in dimension {i}: an index there ({_indices_read(pc.consume, name, i)}) is "
                "data-dependent or unbounded (a value read from memory, or a cast halo can't "
                f"follow). Clamp it (halo.clamp(index, 0, n - 1), n the extent of {name} to "
                f"compute) or read {name} through a boundary condition; halo won't guess "
                "a region")
    required = _apply_bounds(f, list(required))
    pure_region = required
    updates = pc.produce.stmts[1:] if isinstance(pc.produce, n.Block) else ()
    if updates:
        touched = boxes_touched(n.Block(tuple(updates)), name, calls=True, provides=True,
                                simplifier=simplifier, accessed=accessed)
        # The updates' pure loops run over `required` (their lets, below): said so, what
        # they touch there is `required` itself, and the union drops a min(a, a) that the
        # simplifier, which doesn't see through those lets, would keep. (A register
        # array's indices are then constants: an rfactor'd stage's slot of v was not.)
        covered = _update_lets_as(name, required, ctx)
        pure_region = []
        for i, (req, iv) in enumerate(zip(required, touched, strict=True)):
            if not iv.is_bounded:
                raise BoundsError(
                    f"{name}'s update definitions write or read {name} at an index halo can't "
                    f"bound in dimension {i}; clamp the index into the range {name} should "
                    "cover (e.g. halo.clamp(idx, 0, bins - 1))")
            iv = Interval(substitute(iv.min, covered), substitute(iv.max, covered))
            pure_region.append(Interval.union(req, iv))
    lets = _stage_lets(name, pure_region, required, ctx, simplifier)
    return [(nm, simplifier.expr(v)) for nm, v in lets]


def _indices_read(stmt: n.Stmt, name: str, dim: int) -> str:
    """The index expressions `stmt` reads `name` at in dimension `dim`, for an error."""
    indices = dict.fromkeys(expr_to_str(node.args[dim]) for node in walk(stmt)
                            if isinstance(node, n.Call) and node.name == name)
    return " or ".join(list(indices)[:3])


def _output_region(f) -> list[Interval]:
    """The region of an output: its buffer, `o.min.{i}` .. `o.min.{i} + o.extent.{i} - 1`."""
    return [Interval(n.Var(f"{f.name}.min.{i}"),
                     n.Add(n.Var(f"{f.name}.min.{i}"),
                           n.Sub(n.Var(f"{f.name}.extent.{i}"), const(1))))
            for i in range(f.dimensions)]


def _bound_interval(f, v: str) -> tuple[int, Interval]:
    """The dimension and interval that `f.bound(v, min, extent)` asserts."""
    lo, extent = f.schedule.bounds[v]
    return [a.name for a in f.args].index(v), Interval(lo, n.Sub(n.Add(lo, extent), const(1)))


def _apply_bounds(f, region: list[Interval]) -> list[Interval]:
    """`region` with the dimensions that `bound()` fixes replaced by the bound."""
    for v in f.schedule.bounds:
        i, iv = _bound_interval(f, v)
        region[i] = iv
    return region


def _storage_lets(realize: n.Realize, f, simplifier: Simplifier,
                  accessed: AccessedNames) -> n.Stmt:
    """Storage covers what f's stages write and its consumers read inside the store
    level. A dimension fixed by bound() covers the bound (reads are checked against it
    before running) and whatever the loops write past it (a round_up tail)."""
    name = f.name
    touched, written, read = boxes_touched_each(realize.body, [
        Access(name, calls=True, provides=True), Access(name, calls=False, provides=True),
        Access(name, calls=True, provides=False)], simplifier=simplifier,
        accessed=accessed)
    box = list(touched)
    for i, slack in _round_up_slack(f).items():
        # A round_up split writes up to `slack` points past the region it computes. That
        # region ends where the consumers' reads end; interval arithmetic over the writes
        # alone can miss it where the region comes from a consumer's guarded tail, whose
        # promised range doesn't hold outside the guard (found by halo.fuzz).
        if read is not None and read[i].is_bounded:
            box[i] = Interval.union(box[i], Interval(read[i].max, n.Add(read[i].max,
                                                                         const(slack))))
    for v in f.schedule.bounds:
        i, iv = _bound_interval(f, v)
        box[i] = Interval.union(iv, written[i])
    lets: list[tuple[str, n.Expr]] = []
    bounds = []
    for i, iv in enumerate(box):
        if not iv.is_bounded:
            raise InternalError(f"allocation of {name} is unbounded in dimension {i}")
        lo, hi = simplifier.expr(iv.min), simplifier.expr(iv.max)
        lets += [(f"{name}.min.{i}", lo),
                 (f"{name}.extent.{i}", simplifier.expr(n.Add(n.Sub(hi, lo), const(1))))]
        bounds.append((n.Var(f"{name}.min.{i}"), n.Var(f"{name}.extent.{i}")))
    body = n.Realize(name, realize.type, tuple(bounds), realize.body, realize.scope)
    return _wrap(lets, body)


def _round_up_slack(f) -> dict[int, int]:
    """Per dimension of `f`, how many points past the end of the computed region its
    round_up splits (in any specialization too) may write: the product of their factors,
    minus one. A split of a fused loop counts for both dimensions."""
    dim_of = {v.name: i for i, v in enumerate(f.args)}
    factors: dict[int, int] = {}
    for sched in f.schedule.stages[0].variants():
        sources = {v: frozenset({v}) for v in dim_of}
        for t in sched.transforms:
            if isinstance(t, Split) and t.tail is TailStrategy.ROUND_UP:
                for v in sources[t.old]:
                    factors[dim_of[v]] = factors.get(dim_of[v], 1) * t.factor
            sources = sources_after(t, sources)
    return {i: factor - 1 for i, factor in factors.items() if factor > 1}


def _region_checks(name: str, box, what: str, mins, unbounded: str,
                   simplifier: Simplifier, stmt: n.Stmt) -> list[RegionCheck]:
    """One check per dimension that `box` (what `stmt` touches of array `name`) lies
    in [mins[i], mins[i] + extent); `unbounded` (formatted with the dimension `i` and the
    `index` expressions read there) is the error when halo can't bound the access."""
    checks = []
    for i, iv in enumerate(box or ()):
        if not iv.is_bounded:
            raise BoundsError(unbounded.format(i=i, index=_indices_read(stmt, name, i)))
        checks.append(RegionCheck(name, i, simplifier.expr(iv.min), simplifier.expr(iv.max),
                                  mins[i],
                                  n.Var(f"{name}.extent.{i}"), what))
    return checks


_MAX_VARIANTS = 64


def _record_checks(stmt: n.Stmt, ctx: LowerContext,
                   simplifier: Simplifier) -> None:
    """The checks of what `stmt` accesses. A specialized stage runs one of its nests, so
    the accesses of each combination of branches are checked only under the conditions
    that choose it (a branch not taken may read past an input's end)."""
    variants = _branch_variants(stmt)
    if len(variants) > _MAX_VARIANTS:  # the union of all branches is checked instead
        variants = [(None, stmt)]
    for when, variant in variants:
        start = len(ctx.checks)
        _record_variant_checks(variant, ctx, simplifier)
        ctx.checks[start:] = [replace(c, when=when) for c in ctx.checks[start:]]


def _branch_variants(stmt: n.Stmt) -> list[tuple[n.Expr | None, n.Stmt]]:
    """`stmt` with each choice between specialized nests (an IfThenElse with an else,
    which only specializations make, besides whole-tile nests, which touch what their
    else branch does) resolved, and the condition that selects it."""
    choice = next((s for s in walk(stmt) if isinstance(s, n.IfThenElse)
                   and s.else_case is not None and not n.is_whole_tiles(s.condition)), None)
    if choice is None:
        return [(None, stmt)]
    out = []
    for cond, branch in ((choice.condition, choice.then_case),
                         (n.Not(choice.condition), choice.else_case)):
        resolved = rewrite(stmt, lambda s, c=choice, b=branch: b if s is c else None)
        for when, variant in _branch_variants(resolved):
            out.append((cond if when is None else n.And(cond, when), variant))
            if len(out) > _MAX_VARIANTS:
                return out
    return out


def _record_variant_checks(stmt: n.Stmt, ctx: LowerContext,
                           simplifier: Simplifier) -> None:
    accesses = [Access(name) for name in ctx.env.inputs]
    accesses += [Access(name) for name, f in ctx.env.funcs.items()
                 if ctx.compute_levels[name].kind is not PlacementKind.INLINE
                 and name not in ctx.outputs
                 and f.schedule.bounds]
    accesses += [Access(name, calls=True, provides=True) for name in ctx.outputs]
    boxes = dict(zip(accesses, boxes_touched_each(stmt, accesses, simplifier=simplifier),
                     strict=True))
    for name, inp in ctx.env.inputs.items():
        ctx.checks += _region_checks(
            name, boxes[Access(name)], "input", [const(0)] * inp.ndim,
            f"can't bound where input {name} is read in dimension {{i}}: an index there "
            "({index}) is data-dependent or unbounded (a value read from memory, or a cast "
            "halo can't follow). Clamp it (halo.clamp(index, 0, "
            f"{name}.shape[{{i}}] - 1)) or read {name} through a boundary condition",
            simplifier, stmt)
    for name, f in ctx.env.funcs.items():
        if ctx.compute_levels[name].kind is PlacementKind.INLINE:
            continue
        # bound() must cover what is read (and, for an output, the region realized).
        used = _output_region(f) if name in ctx.outputs else boxes.get(Access(name))
        for v in f.schedule.bounds:
            i, iv = _bound_interval(f, v)
            if used is not None and used[i].is_bounded:
                ctx.checks.append(RegionCheck(
                    name, i, simplifier.expr(used[i].min), simplifier.expr(used[i].max),
                    simplifier.expr(iv.min),
                    simplifier.expr(n.Add(n.Sub(iv.max, iv.min), const(1))), "bound"))
    for name in ctx.outputs:  # what is written, and what other Funcs read of an output
        dims = ctx.env.funcs[name].dimensions
        ctx.checks += _region_checks(
            name, boxes[Access(name, calls=True, provides=True)], "output",
            [n.Var(f"{name}.min.{i}") for i in range(dims)],
            f"can't bound where output {name} is written in dimension {{i}} (an update "
            "writes at a data-dependent or unbounded index); clamp the index into the "
            f"output's range, e.g. halo.clamp(idx, 0, {name}_size - 1)", simplifier, stmt)


def describe(check: RegionCheck, lo: int, hi: int, lo_ok: int, extent: int) -> BoundsError:
    """The error a failed check raises, with the evaluated numbers."""
    from halo.errors import input_bounds_error
    if check.what == "input":
        return input_bounds_error(check.name, check.dim, lo, hi, extent)
    if check.what == "whole tiles":
        return BoundsError(check.why)
    if check.what == "bound":
        return BoundsError(
            f"{check.name}.bound(...) fixes dimension {check.dim} to [{lo_ok}, "
            f"{lo_ok + extent - 1}], but [{lo}, {hi}] of it is used; widen the bound or "
            "realize a smaller output")
    return BoundsError(
        f"output {check.name} is written at [{lo}, {hi}] in dimension {check.dim}, outside "
        f"the region being realized [{lo_ok}, {lo_ok + extent - 1}]: a split with "
        "tail='round_up' on an output, or an update writing outside the output (clamp its "
        f"index). Written at: {expr_to_str(check.lo)} .. {expr_to_str(check.hi)}")
