"""`rfactor`: an associative update becomes a parallelizable intermediate plus a merge.

Given the update `f[lhs] = f[lhs] op e` over reduction loops L (after the stage's splits
and fuses of reduction loops, outermost first) and one of them, `p`, rfactor(p, v) makes

    intm[v, *f.args] = identity(op)
    intm[v, *lhs]    = intm[v, *lhs] op e      over L without p, with p replaced by v
    f[*f.args]       = f[*f.args] op intm[p, *f.args]      over p (this stage)

Each value of `v` accumulates its share of the domain into its own slice of `intm`, so
the intermediate's pure loop `v` runs in parallel; the merge then combines the slices.
The reduction variables may index the left side (`g[r.x, r.y] += 1`, factored along r.x:
`intm[u, u, r.y] += 1`): each slice is written where f would be for that value of p, and
holds the identity elsewhere, so the merge gives f's result (the slice's loop `u` is one
loop however many dimensions it indexes).
This is only the same result when `op` is associative, so the update must be one of
the forms `halo.schedule.rfactor.recognize` accepts (`e` free of f); anything else is
refused. Loops made by split (guarded where the factor doesn't divide) and fuse become
reduction variables of new RDoms, named as the loops were.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str
from halo.ir.substitute import substitute
from halo.ir.visitor import walk
from halo.lang.caching import note_reads
from halo.lang.expr import Expr
from halo.lang.rdom import RDom
from halo.lang.var import Var
from halo.program import Definition
from halo.schedule.records import Dim, RFactor, StageSchedule
from halo.schedule.rfactor import (
    LEGAL_FORMS,
    OPERATORS,
    default_name,
    recognize,
    reduction_loops,
)
from halo.schedule.stage import loop_name

if TYPE_CHECKING:
    from halo.lang.func import Func, Stage


def rfactor(stage: Stage, rvar: object, v: object, name: str | None) -> Func:
    """`stage.rfactor(rvar, v)`: see `Stage.rfactor`."""
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
    accumulate, merge, identity = OPERATORS[kind]

    bounds, value_of, guards = reduction_loops(d, sched, error)

    def resolve(x: n.Expr, preserved_as: n.Expr) -> n.Expr:
        """`x`, over the reduction variables, in terms of the loops (one substitution:
        a split may give its outer loop the name of the variable it splits)."""
        return substitute(substitute(x, value_of), {loop: preserved_as})

    bound_deps = frozenset().union(*(b.deps for r in d.rdom.rvars for b in (r.min, r.extent)))
    other_deps = d.deps - {f, d.rdom}
    intm_name = name or default_name(f.name, k)
    if intm_name in _names_reachable(f):
        raise error(f"a Func or input named '{intm_name}' is already part of this "
                    "pipeline; pass another name=... to rfactor")
    intm = f._new_func(intm_name)
    var_expr = n.Var(var)
    intm[(Var(var), *f.args)] = Expr(n.const(identity(f.type), f.type))

    kept = [x for x in rloops if x != loop]
    intm_rdom = RDom(*((Expr(bounds[x].min, bound_deps), Expr(bounds[x].extent, bound_deps))
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
    note_reads(intm, update)
    intm.schedule.stages.append(StageSchedule(
        [Dim(x) for x in update.pure_var_names()] + [Dim(x, pure=False) for x in kept]))

    merge_rdom = RDom((Expr(bounds[loop].min, bound_deps), Expr(bounds[loop].extent, bound_deps)),
                      name=f"{intm_name}_merge", rvar_names=(loop,))
    pure_args = tuple(a.node for a in f.args)
    part = n.Call(f.type, intm_name, (n.Var(loop), *pure_args), n.CallKind.FUNC)
    merged = Definition(
        pure_args, merge(n.Call(f.type, f.name, pure_args, n.CallKind.FUNC), part),
        merge_rdom, bound_deps | {f, intm, merge_rdom})
    f._updates[k - 1] = merged
    note_reads(f, merged)
    f.schedule.stages[k] = StageSchedule([*(Dim(x) for x in pure), Dim(loop, pure=False)],
                                         rfactor=RFactor(loop, var, intm_name, sched))
    return intm


def _names_reachable(f: Func) -> set[str]:
    """Names of the Funcs, inputs and Params that `f` reads, directly or through other
    Funcs and RDom bounds (the objects of the pipeline `f` is the output of)."""
    names: set[str] = set()
    seen: set[int] = set()
    todo: list[object] = [f]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, RDom):
            todo += [d for lo, ext in obj.bounds for d in lo.deps | ext.deps]
            todo += obj.predicate.deps if obj.predicate is not None else ()
            continue
        names.add(obj.name)
        if getattr(obj, "defined", False):
            todo += [d for definition in obj.definitions for d in definition.deps]
    return names
