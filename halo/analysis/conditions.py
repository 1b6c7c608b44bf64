"""Index conditions (a tail guard's `x < e`, a partition's `0 <= min(t * 8, e - 8)`): their
conjuncts, their slack, whether interval arithmetic proves one over variables' ranges, and
the range of a loop where one linear in its variable holds."""
from __future__ import annotations

from collections.abc import Mapping

from halo.analysis.interval import Interval, bounds_of_expr
from halo.analysis.simplify import simplify
from halo.analysis.simplify.pattern import no_overflow
from halo.ir import nodes as n
from halo.ir.substitute import free_vars
from halo.ir.visitor import walk

_COMPARISONS = (n.LT, n.LE)
_READS = (n.CallKind.FUNC, n.CallKind.INPUT)


def conjuncts(cond: n.Expr) -> list[n.Expr]:
    """The operands of a chain of boolean Ands (`cond` itself when it is none)."""
    if isinstance(cond, n.And) and cond.type.is_bool:
        return conjuncts(cond.a) + conjuncts(cond.b)
    return [cond]


def reads_memory(e: n.Expr) -> bool:
    """Whether evaluating `e` loads from a buffer or calls a Func or input: such a value
    can't be computed where it wasn't (its guard may be what keeps the read in bounds)."""
    return any(isinstance(x, n.Load) or isinstance(x, n.Call) and x.kind in _READS
               for x in walk(e))


def is_index_condition(cond: n.Expr) -> bool:
    """A conjunction of comparisons of index arithmetic (signed integers of 32 bits or
    more, which don't wrap: a comparison's slack, `b - a >= 0`, means `a <= b` only
    there) that reads no memory and calls nothing."""
    if any(isinstance(e, (n.Load, n.Call)) for e in walk(cond)):
        return False
    return all(isinstance(c, _COMPARISONS) and no_overflow(c.a.type)
               for c in conjuncts(cond))


def slack(c: n.Expr) -> n.Expr:
    """For an integer comparison, an expression that is >= 0 exactly when it holds."""
    match c:
        case n.LE(a=a, b=b):
            return n.Sub(b, a)
        case n.LT(a=a, b=b):
            return n.Sub(n.Sub(b, a), n.const(1, a.type))
    raise AssertionError(c)


def proves(c: n.Expr, scope: Mapping[str, Interval]) -> bool:
    """Whether the index comparison `c` holds for every value of the variables of
    `scope` in their intervals (False where it can't tell)."""
    if not is_index_condition(c) or isinstance(c, n.And):
        return False
    low = bounds_of_expr(simplify(slack(c)), scope).min
    if low is None:
        return False
    holds = simplify(n.LE(n.const(0, low.type), low))
    return isinstance(holds, n.Const) and bool(holds.value)


def steady_range(cond: n.Expr, loop: n.For) -> tuple[n.Expr, n.Expr] | None:
    """[start, end) inside the loop's range where `cond` holds, when each of its
    comparisons is linear in the loop variable with a constant coefficient."""
    hi = n.Add(loop.min, loop.extent)
    start, end = loop.min, None
    for c in conjuncts(cond):
        form = linear_form(simplify(slack(c)), loop.name)
        if form is None or form[0] == 0:
            return None
        k, rest = form  # k * v + rest >= 0
        if k > 0:  # v >= ceil(-rest / k)
            start = n.Min(n.Max(start, n.Sub(n.const(0), n.Div(rest, n.const(k)))), hi)
        else:  # v <= floor(rest / -k)
            bound = n.Add(n.Div(rest, n.const(-k)), n.const(1))
            end = bound if end is None else n.Min(end, bound)
    start = simplify(start)
    end = simplify(hi if end is None else n.Max(n.Min(end, hi), start))
    return start, end


def linear_form(e: n.Expr, name: str) -> tuple[int, n.Expr] | None:
    """(k, rest) with e == k * name + rest, rest free of `name`, or None."""
    if name not in free_vars(e):
        return 0, e
    match e:
        case n.Var(name=v) if v == name:
            return 1, n.const(0, e.type)
        case n.Add(a=a, b=b) | n.Sub(a=a, b=b):
            fa, fb = linear_form(a, name), linear_form(b, name)
            if fa is None or fb is None:
                return None
            if isinstance(e, n.Add):
                return fa[0] + fb[0], n.Add(fa[1], fb[1])
            return fa[0] - fb[0], n.Sub(fa[1], fb[1])
        case n.Mul(a=a, b=n.Const(value=c)) | n.Mul(a=n.Const(value=c), b=a):
            fa = linear_form(a, name)
            if fa is None:
                return None
            return fa[0] * c, n.Mul(fa[1], n.const(c, e.type))
    return None
