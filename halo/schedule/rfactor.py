"""What `rfactor` (in `lang/rfactor.py`) and `atomic()` know about an update, over
records and IR: the associative forms `f = f op e` they accept (`recognize`,
`OPERATORS`), the intermediate's default name, and the reduction loops a stage's splits
and fuses made, as reduction variables (`reduction_loops`). Integer overflow wraps, so
sums and products of integers regroup exactly; floats are regrouped as if they were
associative, as Halide does.
"""
from __future__ import annotations

from collections.abc import Callable

from halo.analysis.loops import (
    Fuse,
    LoopRange,
    Split,
    divides,
    fused_values,
    loop_sources,
    ranges_after,
    split_value,
)
from halo.ir import nodes as n
from halo.ir.substitute import substitute, var_names
from halo.ir.visitor import walk
from halo.program import Definition
from halo.schedule.races import self_read_problem
from halo.schedule.records import StageSchedule


def _select_min(acc: n.Expr, e: n.Expr) -> n.Expr:
    """`e < acc ? e : acc`: a minimum that never picks a NaN `e` (unlike Min)."""
    return n.Select(n.LT(e, acc), e, acc)


def _select_max(acc: n.Expr, e: n.Expr) -> n.Expr:
    """`acc < e ? e : acc`: a maximum that never picks a NaN `e` (unlike Max)."""
    return n.Select(n.LT(acc, e), e, acc)


# the update's form -> (how intm accumulates e, how the merge adds a slice, identity)
OPERATORS = {
    "sum": (n.Add, n.Add, lambda t: 0),
    "difference": (n.Sub, n.Add, lambda t: 0),    # f - e1 - e2 == f + (0 - e1 - e2)
    "product": (n.Mul, n.Mul, lambda t: 1),
    "minimum": (n.Min, n.Min, lambda t: t.max_value()),
    "maximum": (n.Max, n.Max, lambda t: t.min_value()),
    # a select on f < e skips NaN where Min/Max propagate it: it stays a select
    "select minimum": (_select_min, _select_min, lambda t: t.max_value()),
    "select maximum": (_select_max, _select_max, lambda t: t.min_value()),
    "bitwise and": (n.And, n.And, lambda t: -1),  # all ones (True for bool)
    "bitwise or": (n.Or, n.Or, lambda t: 0),
    "bitwise xor": (n.Xor, n.Xor, lambda t: 0),
}

LEGAL_FORMS = ("{f} = {f} + e, e + {f}, {f} - e, {f} * e, e * {f}, {f} & e, {f} | e, {f} ^ e, "
                "min({f}, e), max({f}, e) (either order, or as a select on {f} < e that picks "
                "e where it holds, select(e < {f}, e, {f})), with e free of {f}")


def recognize(func: str, self_call: n.Call, value: n.Expr) -> tuple[str, n.Expr] | None:
    """(operator name, e) when `value` is `self_call op e` in a form of `OPERATORS`."""
    def free(x: n.Expr) -> bool:
        return not any(isinstance(c, n.Call) and c.name == func for c in walk(x))

    def either(a: n.Expr, b: n.Expr, kind: str, commutes: bool = True):
        if a == self_call and free(b):
            return kind, b
        if commutes and b == self_call and free(a):
            return kind, a
        return None

    if (shifted := _shifted_sum(self_call, value)) is not None and free(shifted) and \
            not _wraps(value.type):
        return "sum", shifted
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
            # select(p < q, p, q) is min(p, q); select(p < q, q, p) is max(p, q). Picking
            # e where the comparison holds never picks a NaN e and keeps a NaN f: order
            # free. Picking f there forgets a NaN f at the next e: only for integers.
            minimum = t == p
            if e == self_call and free(t):
                return ("select minimum" if minimum else "select maximum"), t
            if t == self_call and free(e) and not t.type.is_float:
                return ("minimum" if minimum else "maximum"), e
    return None


def reduction_form(func: str, d: Definition) -> tuple[str, n.Expr] | None:
    """(operator name, e) when update `d` of `func` is `func = func op e` in a form of
    `OPERATORS` that reads `func` nowhere else (value, left side, RDom predicate)."""
    if self_read_problem(func, d.args, d.value, d.predicate):
        return None
    return recognize(func, n.Call(d.value.type, func, d.args, n.CallKind.FUNC), d.value)


def warp_point_loops(func: str, d: Definition, sched: StageSchedule) -> frozenset[str] | None:
    """For a warp reduction of update `d` (schedule `sched`): None where the update isn't
    associative (`reduction_form`), else the loops made of variables its left side uses
    (pure variables, and the reduction variables it uses), which pick the point updated:
    threads that differ in one of them update different points, so such a loop can't be
    the warp's."""
    if reduction_form(func, d) is None:
        return None
    rvars = [r.name for r in d.rdom.rvars] if d.rdom is not None else []
    used = set().union(*(var_names(a) for a in d.args))
    sources = loop_sources([*d.pure_var_names(), *rvars], sched.transforms)
    return frozenset(name for name, source in sources.items() if source & used)


def _shifted_sum(self_call: n.Call, value: n.Expr) -> n.Expr | None:
    """e2 when `value` is max(f + e, f) or min(f + e, f) (operands in any order), which is
    f + e2 for e2 = max(e, 0) (min(e, 0)): a sum, as Halide proves (rfactor.cpp). Not
    for types that wrap (`recognize` checks): there f + e may overflow where the max
    keeps f."""
    if not isinstance(value, (n.Min, n.Max)) or self_call not in (value.a, value.b):
        return None
    shifted = value.b if value.a == self_call else value.a
    if not isinstance(shifted, n.Add) or self_call not in (shifted.a, shifted.b):
        return None
    e = shifted.b if shifted.a == self_call else shifted.a
    return type(value)(e, n.const(0, e.type))


def _wraps(t: n.Type) -> bool:
    """Whether `t` wraps around on overflow (8- and 16-bit and unsigned integers; int32
    and int64 overflow is the program's error, as in Halide: see `ir/nodes.py`)."""
    return t.is_uint or t.is_int and t.bits < 32


def default_name(func: str, stage: int) -> str:
    """The intermediate's name when rfactor isn't given one: `hist_intm` for the first
    update of `hist`, `hist_intm1` for the second, ..."""
    return f"{func}_intm" if stage == 1 else f"{func}_intm{stage - 1}"


def reduction_loops(d: Definition, sched: StageSchedule, error: Callable[[str], Exception]
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
