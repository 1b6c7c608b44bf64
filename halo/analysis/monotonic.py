"""Monotonicity of an integer expression in one variable.

`monotonic(e, var)` says how `e` moves when `var` grows and every other variable stays
put: `CONSTANT` (it doesn't depend on `var`), `INCREASING` or `DECREASING` (never
strictly: "non-decreasing" and "non-increasing"), or `UNKNOWN`. The answer is
conservative: `UNKNOWN` whenever a rule below doesn't prove more. Like the simplifier, it
assumes int32/int64 arithmetic doesn't overflow.

The rules, one per node family:
  * a Var is INCREASING in itself, CONSTANT otherwise; a Const is CONSTANT;
  * `a + b`, `min(a, b)`, `max(a, b)`: the two directions combined (CONSTANT with X is X;
    opposite directions are UNKNOWN); `a - b`: `a` combined with `b` flipped;
  * `a * c`, `a // c` with a constant `c`: `a`'s direction, flipped when c < 0;
  * `select(c, a, b)`: when `c` doesn't depend on `var`, both branches combined;
  * a widening cast of a signed integer keeps its operand's direction;
  * `let x = v in b`: `b` with `v` substituted;
  * anything else is CONSTANT if `var` doesn't occur in it, else UNKNOWN.
"""
from __future__ import annotations

from enum import Enum

from halo.ir import nodes as n
from halo.ir.substitute import substitute, uses_var


class Monotonic(Enum):
    CONSTANT = "constant"
    INCREASING = "increasing"
    DECREASING = "decreasing"
    UNKNOWN = "unknown"


_FLIP = {Monotonic.INCREASING: Monotonic.DECREASING,
         Monotonic.DECREASING: Monotonic.INCREASING}


def _combine(a: Monotonic, b: Monotonic) -> Monotonic:
    if a is Monotonic.CONSTANT:
        return b
    if b is Monotonic.CONSTANT or a is b:
        return a
    return Monotonic.UNKNOWN


def _flip(a: Monotonic) -> Monotonic:
    return _FLIP.get(a, a)


def _scaled(a: Monotonic, c: n.Expr) -> Monotonic:
    """`a` times (or floor-divided by) `c`."""
    if not isinstance(c, n.Const):
        return Monotonic.UNKNOWN if a is not Monotonic.CONSTANT else a
    if c.value == 0:
        return Monotonic.CONSTANT
    return a if c.value > 0 else _flip(a)


def monotonic(e: n.Expr, var: str) -> Monotonic:
    """How `e` moves as `var` grows (see the module docstring)."""
    if not uses_var(e, var):
        return Monotonic.CONSTANT
    if not (e.type.is_int and e.type.bits >= 32):  # narrower integers wrap
        return Monotonic.UNKNOWN
    match e:
        case n.Var(name=name) if name == var:
            return Monotonic.INCREASING
        case n.Add(a=a, b=b) | n.Min(a=a, b=b) | n.Max(a=a, b=b):
            return _combine(monotonic(a, var), monotonic(b, var))
        case n.Sub(a=a, b=b):
            return _combine(monotonic(a, var), _flip(monotonic(b, var)))
        case n.Mul(a=a, b=n.Const() as c) | n.Mul(a=n.Const() as c, b=a):
            return _scaled(monotonic(a, var), c)
        case n.Div(a=a, b=n.Const() as c):
            return _scaled(monotonic(a, var), c)
        case n.Select(condition=cond, true_value=a, false_value=b) \
                if not uses_var(cond, var):
            return _combine(monotonic(a, var), monotonic(b, var))
        case n.Cast(type=t, value=v) if v.type.is_int and t.bits >= v.type.bits:
            return monotonic(v, var)
        case n.Let(name=name, value=value, body=body):
            return monotonic(substitute(body, {name: value}), var)
    return Monotonic.UNKNOWN
