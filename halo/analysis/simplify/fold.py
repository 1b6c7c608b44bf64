"""Constant folding with exactly the semantics of `halo/ir/nodes.py`.

`fold(e)` evaluates a node whose operands are all `Const`s: integers in unbounded Python
ints wrapped to the type's width by `nodes.const` (floor `//` and `%`, and `x // 0 ==
x % 0 == 0`); floats in their own NumPy dtype, so float32 arithmetic rounds to float32;
casts through NumPy's `astype` (float -> int truncates, int -> narrower int wraps,
number -> bool is `!= 0`); comparisons give a bool `Const`; the math `Call`s listed in
nodes.py through NumPy in the operand's dtype (`round` is half to even). A float
constant's value is read as its type rounds it, so `Const(float32, 0.1)` means
`float32(0.1)`.
"""
from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np

from halo.ir import nodes as n

_INT_OPS: dict[type, Callable[[int, int], int]] = {
    n.Add: operator.add,
    n.Sub: operator.sub,
    n.Mul: operator.mul,
    n.Div: lambda a, b: a // b if b else 0,
    n.Mod: lambda a, b: a % b if b else 0,
    n.Min: min,
    n.Max: max,
    n.And: operator.and_,
    n.Or: operator.or_,
    n.Xor: operator.xor,
}

_FLOAT_OPS: dict[type, Callable[[np.floating, np.floating], np.floating]] = {
    n.Add: operator.add,
    n.Sub: operator.sub,
    n.Mul: operator.mul,
    n.Div: operator.truediv,
    n.Mod: lambda a, b: a - b * np.floor(a / b),
    n.Min: np.minimum,
    n.Max: np.maximum,
}

_COMPARE_OPS: dict[type, Callable[[object, object], bool]] = {
    n.EQ: operator.eq,
    n.NE: operator.ne,
    n.LT: operator.lt,
    n.LE: operator.le,
}

MATH_FUNCTIONS: dict[str, Callable[..., np.generic]] = {
    "sqrt": np.sqrt,
    "exp": np.exp,
    "log": np.log,
    "pow": np.power,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.rint,
    "abs": np.abs,
}


def _scalar(c: n.Const) -> np.generic:
    """The value of `c` as a NumPy scalar of its element type."""
    return np.asarray(c.value, dtype=c.type.numpy)[()]


def _is_const(e: n.Expr) -> bool:
    return isinstance(e, n.Const)


def foldable(e: n.Expr) -> bool:
    """Whether `fold` can evaluate `e`: all its operands are constants (a Select needs only
    a constant condition; Func/input Calls and Loads never fold)."""
    match e:
        case n.BinaryOp():
            return _is_const(e.a) and _is_const(e.b)
        case n.Not():
            return _is_const(e.a)
        case n.Cast():
            return _is_const(e.value)
        case n.Select():
            return _is_const(e.condition)
        case n.Call(kind=n.CallKind.MATH):
            return e.name in MATH_FUNCTIONS and all(map(_is_const, e.args))
    return False


def fold(e: n.Expr) -> n.Expr:
    """The value of `e`, for which `foldable(e)` holds: a `Const`, or for a Select the
    chosen branch."""
    with np.errstate(all="ignore"):
        match e:
            case n.Select(condition=cond):
                return e.true_value if cond.value else e.false_value
            case n.Cast(type=t, value=v) if v.type.is_float and not t.is_float \
                    and np.isnan(v.value):
                return n.const(0, t)  # NaN to an integer gives 0 (nodes.py)
            case n.Cast(type=t, value=v):
                return n.const(_scalar(v).astype(t.numpy).item(), t)
            case n.Not(a=a) if a.type.is_bool:
                return n.const(not a.value, e.type)
            case n.Not(a=a):
                return n.const(~a.value, e.type)
            case n.Compare(a=a, b=b):
                return n.const(bool(_COMPARE_OPS[type(e)](_scalar(a), _scalar(b))), e.type)
            case n.BinaryOp(a=a, b=b) if a.type.is_float:
                value = _FLOAT_OPS[type(e)](_scalar(a), _scalar(b))
                return n.const(float(np.asarray(value, dtype=e.type.numpy)), e.type)
            case n.BinaryOp(a=a, b=b):
                return n.const(_INT_OPS[type(e)](a.value, b.value), e.type)
            case n.Call(name="abs", args=(a,)) if not a.type.is_float:
                return n.const(abs(a.value), e.type)
            case n.Call(name=name, args=args):
                value = MATH_FUNCTIONS[name](*(_scalar(a) for a in args))
                return n.const(float(np.asarray(value, dtype=e.type.numpy)), e.type)
    raise TypeError(f"can't fold {e!r}")
