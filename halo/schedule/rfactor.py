"""`rfactor`: an associative update becomes a parallelizable intermediate plus a merge.

Given the update `f[lhs] = f[lhs] op e` over reduction loops L (after the stage's splits
and fuses of reduction loops, outermost first) and one of them, `p`, rfactor(p, v) makes

    intm[v, *f.args] = identity(op)
    intm[v, *lhs]    = intm[v, *lhs] op e      over L without p, with p replaced by v
    f[*f.args]       = f[*f.args] op intm[p, *f.args]      over p (this stage)

Each value of `v` accumulates its share of the domain into its own slice of `intm`, so
the intermediate's pure loop `v` runs in parallel; the merge then combines the slices.
This is only the same result when `op` is associative, so the update must be one of
the forms in `_OPERATORS` (`e` free of f; integer overflow wraps, so sums and products
of integers regroup exactly, and floats are regrouped as if they were associative, as
Halide does), anything else is refused. Loops made by split
(guarded where the factor doesn't divide) and fuse become reduction variables of new
RDoms, named as the loops were.
"""
from __future__ import annotations

from halo.analysis.loops import (
    Fuse,
    LoopRange,
    Split,
    divides,
    fused_values,
    ranges_after,
    split_value,
)
from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str
from halo.ir.substitute import substitute
from halo.ir.visitor import walk
from halo.schedule.records import Dim, RFactor, StageSchedule
from halo.schedule.stage import loop_name

# the update's form -> (how intm accumulates e, how the merge adds a slice, identity)
_OPERATORS = {
    "sum": (n.Add, n.Add, lambda t: 0),
    "difference": (n.Sub, n.Add, lambda t: 0),    # f - e1 - e2 == f + (0 - e1 - e2)
    "product": (n.Mul, n.Mul, lambda t: 1),
    "minimum": (n.Min, n.Min, lambda t: t.max_value()),
    "maximum": (n.Max, n.Max, lambda t: t.min_value()),
    "bitwise and": (n.And, n.And, lambda t: -1),  # all ones (True for bool)
    "bitwise or": (n.Or, n.Or, lambda t: 0),
    "bitwise xor": (n.Xor, n.Xor, lambda t: 0),
}

LEGAL_FORMS = ("{f} = {f} + e, e + {f}, {f} - e, {f} * e, e * {f}, {f} & e, {f} | e, {f} ^ e, "
                "min({f}, e), max({f}, e) (either order, or as a select on {f} < e), with e "
                "free of {f}")


def recognize(func: str, self_call: n.Call, value: n.Expr) -> tuple[str, n.Expr] | None:
    """(operator name, e) when `value` is `self_call op e` in a form of `_OPERATORS`."""
    def free(x: n.Expr) -> bool:
        return not any(isinstance(c, n.Call) and c.name == func for c in walk(x))

    def either(a: n.Expr, b: n.Expr, kind: str, commutes: bool = True):
        if a == self_call and free(b):
            return kind, b
        if commutes and b == self_call and free(a):
            return kind, a
        return None

    match value:
        case n.Add(a=a, b=b):
            return either(a, b, "sum")
        case n.Sub(a=a, b=b):
            return either(a, b, "difference", commutes=False)
        case n.Mul(a=a, b=b):
            return either(a, b, "product")
        case n.Min(a=a, b=b):
            return either(a, b, "minimum")
        case n.Max(a=a, b=b):
            return either(a, b, "maximum")
        case n.And(a=a, b=b):
            return either(a, b, "bitwise and")
        case n.Or(a=a, b=b):
            return either(a, b, "bitwise or")
        case n.Xor(a=a, b=b):
            return either(a, b, "bitwise xor")
        case n.Select(condition=n.LT(a=p, b=q) | n.LE(a=p, b=q), true_value=t,
                      false_value=e) if {p, q} == {t, e} and t != e:
            # select(p < q, p, q) is min(p, q); select(p < q, q, p) is max(p, q)
            return either(t, e, "minimum" if t == p else "maximum")
    return None


def default_name(func: str, stage: int) -> str:
    """The intermediate's name when rfactor isn't given one: `hist_intm` for the first
    update of `hist`, `hist_intm1` for the second, ..."""
    return f"{func}_intm" if stage == 1 else f"{func}_intm{stage - 1}"


def rfactor(stage, rvar, v, name: str | None):
    """`stage.rfactor(rvar, v)`: see `UpdateStage.rfactor`."""
    from halo.lang.environment import Environment
    from halo.lang.expr import Expr
    from halo.lang.func import Definition, Func
    from halo.lang.rdom import RDom
    from halo.lang.var import Var

    f, k = stage.func, stage.index
    d: Definition = f.definitions[k]
    sched: StageSchedule = stage._stage()
    loop, var = loop_name(rvar), loop_name(v)
    args = (rvar, v)

    def error(message: str) -> ScheduleError:
        return stage._error("rfactor", args, message)

    if d.rdom is None:
        raise error("this update has no RDom, so there is no reduction to factor")
    dim = sched.find(loop)
    rloops = [x.name for x in sched.dims if not x.pure]
    if dim is None or dim.pure:
        raise error(f"'{loop}' is not a reduction loop of this stage; its reduction loops "
                    f"are {', '.join(rloops)}")
    if len(rloops) == 1:
        raise error(f"'{loop}' is the only reduction loop, which would leave the "
                    "intermediate nothing to reduce; split it first (split(r.x, rxo, rxi, "
                    "16)) and rfactor one of the halves")
    pure = [a.name for a in f.args]
    if var in pure or var in sched.names_used():
        raise error(f"the name '{var}' is already used by {f.name} or this stage; pick a "
                    "new Var for the intermediate's dimension")
    busy = [x.name for x in sched.dims if x.kind is not n.ForKind.SERIAL]
    if busy:
        raise error(f"loop(s) {', '.join(busy)} already have a loop kind; call rfactor "
                    "first and schedule the intermediate and the merge after")

    self_call = n.Call(f.type, f.name, d.args, n.CallKind.FUNC)
    predicate = d.rdom.predicate
    form = recognize(f.name, self_call, d.value)
    reads_f = any(isinstance(c, n.Call) and c.name == f.name
                  for root in (*d.args, *([predicate.node] if predicate is not None else []))
                  for c in walk(root))
    if form is None or reads_f:
        lhs = expr_to_str(self_call)
        raise error(f"the update {lhs} = {expr_to_str(d.value)} is not an associative "
                    f"reduction halo can split: rfactor needs "
                    f"{LEGAL_FORMS.format(f=f.name)} (and {f.name} read nowhere else), so "
                    "that partial results can be combined in any order. Legal instead: keep "
                    "the reduction loops serial, or .atomic() for updates that read "
                    f"{f.name} only at the point they write")
    kind, e = form
    accumulate, merge, identity = _OPERATORS[kind]

    bounds, value_of, guards = _reduction_loops(d, sched, error)

    def resolve(x: n.Expr, preserved_as: n.Expr) -> n.Expr:
        """`x`, over the reduction variables, in terms of the loops (one substitution:
        a split may give its outer loop the name of the variable it splits)."""
        return substitute(substitute(x, value_of), {loop: preserved_as})

    bound_deps = frozenset().union(*(b.deps for r in d.rdom.rvars for b in (r.min, r.extent)))
    other_deps = d.deps - {f, d.rdom}
    intm_name = name or default_name(f.name, k)
    env = Environment.of([f])
    if intm_name in {**env.funcs, **env.inputs, **env.params}:
        raise error(f"a Func or input named '{intm_name}' is already part of this "
                    "pipeline; pass another name=... to rfactor")
    intm = Func(intm_name)
    var_expr = n.Var(var)
    intm[(Var(var), *f.args)] = Expr(n.const(identity(f.type), f.type))

    kept = [x for x in rloops if x != loop]
    intm_rdom = RDom(*((Expr(bounds[x][0], bound_deps), Expr(bounds[x][1], bound_deps))
                       for x in kept), name=f"{intm_name}_r", rvar_names=tuple(kept))
    conditions = [substitute(g, {loop: var_expr}) for g in guards] + \
        ([resolve(predicate.node, var_expr)] if predicate is not None else [])
    if conditions:
        condition = conditions[0]
        for c in conditions[1:]:
            condition = n.And(condition, c)
        deps = (predicate.deps if predicate is not None else frozenset()) - {d.rdom}
        intm_rdom.where(Expr(condition, deps | bound_deps))
    lhs = (var_expr, *(resolve(a, var_expr) for a in d.args))
    intm_call = n.Call(f.type, intm_name, lhs, n.CallKind.FUNC)
    update = Definition(lhs, accumulate(intm_call, resolve(e, var_expr)), intm_rdom,
                        other_deps | bound_deps | {intm, intm_rdom})
    intm._updates.append(update)
    intm.schedule.stages.append(StageSchedule(
        [Dim(x) for x in update.pure_var_names()] + [Dim(x, pure=False) for x in kept]))

    merge_rdom = RDom((Expr(bounds[loop][0], bound_deps), Expr(bounds[loop][1], bound_deps)),
                      name=f"{intm_name}_merge", rvar_names=(loop,))
    pure_args = tuple(a.node for a in f.args)
    part = n.Call(f.type, intm_name, (n.Var(loop), *pure_args), n.CallKind.FUNC)
    f._updates[k - 1] = Definition(
        pure_args, merge(n.Call(f.type, f.name, pure_args, n.CallKind.FUNC), part),
        merge_rdom, bound_deps | {f, intm, merge_rdom})
    f.schedule.stages[k] = StageSchedule([*(Dim(x) for x in pure), Dim(loop, pure=False)],
                                         rfactor=RFactor(loop, var, intm_name, sched))
    return intm


def _reduction_loops(d, sched: StageSchedule, error
                     ) -> tuple[dict[str, LoopRange], dict[str, n.Expr], list[n.Expr]]:
    """The reduction loops the stage's splits and fuses made, as reduction variables:
    their (min, extent) by name, the value of each reduction variable in terms of the
    final loops, and the guards of non-dividing splits (over the final loops)."""
    bounds = {r.name: LoopRange(r.min.node, r.extent.node) for r in d.rdom.rvars}
    value_of: dict[str, n.Expr] = {r.name: n.Var(r.name) for r in d.rdom.rvars}
    guards: list[n.Expr] = []

    def replace_loops(replaced: dict[str, n.Expr]) -> None:
        for name, v in value_of.items():
            value_of[name] = substitute(v, replaced)
        guards[:] = [substitute(g, replaced) for g in guards]

    for t in sched.transforms:
        if isinstance(t, Split):
            if t.old not in bounds:
                raise error(f"split({t.old}, ...) splits a pure loop; call rfactor before "
                            "scheduling the pure loops of this stage")
            old = bounds[t.old]
            point = split_value(old, n.Var(t.outer), n.Var(t.inner), t.factor,
                                t.tail_in(pure_stage=False))
            if divides(old, t.factor):
                replace_loops({t.old: point})
            else:
                # Past the end only where the guard is false; the min shows bounds
                # inference the range, so the guard needn't be understood.
                replace_loops({t.old: n.Min(point, old.max)})
                guards.append(n.LT(point, old.end))
        elif isinstance(t, Fuse):
            if t.outer not in bounds or t.inner not in bounds:
                raise error(f"fuse({t.outer}, {t.inner}, {t.fused}) fuses a pure loop; call "
                            "rfactor before scheduling the pure loops of this stage")
            outer, inner = bounds[t.outer], bounds[t.inner]
            outer_value, inner_value = fused_values(n.Var(t.fused), outer, inner)
            # In range by construction; the clamps show bounds inference the ranges,
            # which a division by a symbolic extent hides.
            replace_loops({t.inner: _clamp(inner_value, inner),
                           t.outer: _clamp(outer_value, outer)})
        bounds = ranges_after(t, bounds)
    return bounds, value_of, guards


def _clamp(value: n.Expr, loop: LoopRange) -> n.Expr:
    return n.Max(n.Min(value, loop.max), loop.min)
