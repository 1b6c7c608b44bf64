"""What `rfactor` (in `lang/rfactor.py`) and `atomic()` know about an update, over
records and IR: the associative forms `f = f op e` they accept (`recognize`,
`OPERATORS`), the intermediate's default name, and the reduction loops a stage's splits
and fuses made, as reduction variables (`reduction_loops`). Integer overflow wraps, so
sums and products of integers regroup exactly; floats are regrouped as if they were
associative, as Halide does.
"""
from __future__ import annotations

from collections.abc import Callable

from halo.ir import nodes as n
from halo.ir.substitute import substitute
from halo.ir.visitor import walk
from halo.program import Definition
from halo.schedule.records import Fuse, Split, StageSchedule

# the update's form -> (how intm accumulates e, how the merge adds a slice, identity)
OPERATORS = {
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
    """(operator name, e) when `value` is `self_call op e` in a form of `OPERATORS`."""
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


def reduction_loops(d: Definition, sched: StageSchedule, error: Callable[[str], Exception]
                     ) -> tuple[dict[str, tuple[n.Expr, n.Expr]], dict[str, n.Expr], list[n.Expr]]:
    """The reduction loops the stage's splits and fuses made, as reduction variables:
    their (min, extent) by name, the value of each reduction variable in terms of the
    final loops, and the guards of non-dividing splits (over the final loops)."""
    bounds = {r.name: (r.min.node, r.extent.node) for r in d.rdom.rvars}
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
            lo, extent = bounds.pop(t.old)
            factor = n.const(t.factor)
            bounds[t.outer] = (n.const(0), n.Div(n.Add(extent, n.const(t.factor - 1)), factor))
            bounds[t.inner] = (n.const(0), factor)
            point = n.Add(n.Add(lo, n.Mul(n.Var(t.outer), factor)), n.Var(t.inner))
            if isinstance(extent, n.Const) and extent.value % t.factor == 0:
                replace_loops({t.old: point})
            else:
                # Past the end only where the guard is false; the min shows bounds
                # inference the range, so the guard needn't be understood.
                replace_loops({t.old: n.Min(point, n.Sub(n.Add(lo, extent), n.const(1)))})
                guards.append(n.LT(point, n.Add(lo, extent)))
        elif isinstance(t, Fuse):
            if t.outer not in bounds or t.inner not in bounds:
                raise error(f"fuse({t.outer}, {t.inner}, {t.fused}) fuses a pure loop; call "
                            "rfactor before scheduling the pure loops of this stage")
            (lo_o, ext_o), (lo_i, ext_i) = bounds.pop(t.outer), bounds.pop(t.inner)
            fused = n.Var(t.fused)
            bounds[t.fused] = (n.const(0), n.Mul(ext_o, ext_i))
            # In range by construction; the clamps show bounds inference the ranges,
            # which a division by a symbolic extent hides.
            replace_loops({t.inner: _clamp(n.Add(lo_i, n.Mod(fused, ext_i)), lo_i, ext_i),
                           t.outer: _clamp(n.Add(lo_o, n.Div(fused, ext_i)), lo_o, ext_o)})
    return bounds, value_of, guards


def _clamp(value: n.Expr, lo: n.Expr, extent: n.Expr) -> n.Expr:
    return n.Max(n.Min(value, n.Sub(n.Add(lo, extent), n.const(1))), lo)
