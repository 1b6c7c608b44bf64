"""User-facing expressions: operator sugar over IR nodes, with halo's type rules.

An `Expr` wraps an IR expression (`.node`) and remembers the objects it depends on
(`.deps`: Funcs, inputs, Params, RDoms) so definitions hold them alive and lowering can
find them. Type rules (API.md):

* Python scalars are weak: `f32 * 2.0` stays float32, `i32 + 1` stays int32, `u8 + 1`
  stays uint8 (a literal that doesn't fit the type is an error), `i32 * 2.5` is float32.
* Two typed operands: float beats integer; the wider float wins; signed with unsigned
  gives signed of the wider width; otherwise the wider type wins; bool converts to the
  other operand's type.
* `/` of two integer expressions is true division in float32; `//` and `%` are floor
  division and modulo.
"""
from __future__ import annotations

import builtins
from collections.abc import Iterable

import numpy as np

from halo.errors import DefinitionError
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str
from halo.ir.types import Type, as_type, bool_, float32, int32

Number = int | float | bool | np.number | np.bool_


class Expr:
    """An expression of the algorithm language. Build with Vars, Func calls, inputs,
    Params, Python numbers and operators; never executed in Python."""

    __slots__ = ("node", "deps")
    __array_priority__ = 1000  # NumPy scalars defer to our operators

    def __init__(self, node: n.Expr, deps: Iterable[object] = ()):
        self.node = node
        self.deps = frozenset(deps)

    __hash__ = object.__hash__

    @property
    def type(self) -> Type:
        return self.node.type

    @property
    def dtype(self) -> Type:
        return self.node.type

    def __repr__(self) -> str:
        return f"Expr({expr_to_str(self.node)}: {self.node.type})"

    def __bool__(self) -> bool:
        raise TypeError(
            "a halo Expr has no truth value while the algorithm is being defined: "
            "use `&` / `|` / `~` instead of `and` / `or` / `not`, and "
            "`halo.select(cond, a, b)` instead of `if`")

    def astype(self, dtype: object) -> Expr:
        return cast(dtype, self)

    # arithmetic
    def __add__(self, o: object) -> Expr: return _binary(n.Add, self, o)
    def __radd__(self, o: object) -> Expr: return _binary(n.Add, o, self)
    def __sub__(self, o: object) -> Expr: return _binary(n.Sub, self, o)
    def __rsub__(self, o: object) -> Expr: return _binary(n.Sub, o, self)
    def __mul__(self, o: object) -> Expr: return _binary(n.Mul, self, o)
    def __rmul__(self, o: object) -> Expr: return _binary(n.Mul, o, self)
    def __truediv__(self, o: object) -> Expr: return _true_div(self, o)
    def __rtruediv__(self, o: object) -> Expr: return _true_div(o, self)
    def __floordiv__(self, o: object) -> Expr: return _floor_div(self, o)
    def __rfloordiv__(self, o: object) -> Expr: return _floor_div(o, self)
    def __mod__(self, o: object) -> Expr: return _binary(n.Mod, self, o)
    def __rmod__(self, o: object) -> Expr: return _binary(n.Mod, o, self)
    def __pow__(self, o: object) -> Expr: return pow(self, o)
    def __rpow__(self, o: object) -> Expr: return pow(o, self)
    def __neg__(self) -> Expr: return _binary(n.Sub, 0, self)
    def __pos__(self) -> Expr: return self
    def __abs__(self) -> Expr: return abs(self)

    # comparisons (a > b is built as b < a)
    def __lt__(self, o: object) -> Expr: return _binary(n.LT, self, o)
    def __le__(self, o: object) -> Expr: return _binary(n.LE, self, o)
    def __gt__(self, o: object) -> Expr: return _binary(n.LT, o, self)
    def __ge__(self, o: object) -> Expr: return _binary(n.LE, o, self)
    def __eq__(self, o: object) -> Expr: return _binary(n.EQ, self, o)  # type: ignore[override]
    def __ne__(self, o: object) -> Expr: return _binary(n.NE, self, o)  # type: ignore[override]

    # logical on bool, bitwise on integers
    def __and__(self, o: object) -> Expr: return _logical(n.And, self, o)
    def __rand__(self, o: object) -> Expr: return _logical(n.And, o, self)
    def __or__(self, o: object) -> Expr: return _logical(n.Or, self, o)
    def __ror__(self, o: object) -> Expr: return _logical(n.Or, o, self)
    def __xor__(self, o: object) -> Expr: return _logical(n.Xor, self, o)
    def __rxor__(self, o: object) -> Expr: return _logical(n.Xor, o, self)

    # No shift operators: say what to write instead (Python would raise a bare TypeError).
    def __lshift__(self, o: object) -> Expr: _no_shift(self, "<<", o)
    def __rlshift__(self, o: object) -> Expr: _no_shift(o, "<<", self)
    def __rshift__(self, o: object) -> Expr: _no_shift(self, ">>", o)
    def __rrshift__(self, o: object) -> Expr: _no_shift(o, ">>", self)

    def __invert__(self) -> Expr:
        if self.type.is_float:
            raise DefinitionError(f"`~` needs a bool or integer operand, not {self.type}")
        return Expr(n.Not(self.node), self.deps)


def _no_shift(a: object, op: str, b: object) -> None:
    def text(v: object) -> str:
        return expr_to_str(v.node) if isinstance(v, Expr) else repr(v)

    instead = "x * 2**k" if op == "<<" else "x // 2**k (floor division, as >> rounds)"
    raise DefinitionError(f"{text(a)} {op} {text(b)}: halo has no shift operators; for x "
                          f"{op} k write {instead}, which compiles to a shift")


def as_expr(value: object) -> Expr:
    """An Expr from an Expr, a 1-D RDom, or a Python/NumPy number (int -> int32,
    float -> float32, bool -> bool)."""
    if isinstance(value, Expr):
        return value
    to_expr = getattr(value, "_as_expr", None)
    if to_expr is not None:
        return to_expr()
    if isinstance(value, (bool, np.bool_)):
        return Expr(n.const(bool(value), bool_))
    if isinstance(value, np.number):
        return Expr(n.const(value.item(), as_type(value.dtype)))
    if isinstance(value, int):
        if not -2**31 <= value < 2**31:
            raise DefinitionError(f"integer literal {value} does not fit in int32; "
                                  "use halo.cast(halo.int64, ...) on an expression")
        return Expr(n.const(value, int32))
    if isinstance(value, float):
        return Expr(n.const(value, float32))
    raise DefinitionError(f"can't use {value!r} (a {type(value).__name__}) in a halo "
                          "expression; expected an Expr, Var, Func call or number")


def _is_weak(value: object) -> bool:
    return isinstance(value, (int, float, bool)) and not isinstance(value, np.generic)


def _weak_const(value: int | float | bool, t: Type) -> Expr:
    """A Python literal given the type of the other operand, when it fits."""
    if isinstance(value, bool):
        return Expr(n.const(value, t)) if not t.is_float else Expr(n.const(float(value), t))
    if isinstance(value, float) and not t.is_float:
        return Expr(n.const(value, float32))
    if isinstance(value, int) and t.is_bool:
        return as_expr(value)
    if isinstance(value, int) and t.is_integer and not t.min_value() <= value <= t.max_value():
        raise DefinitionError(f"integer literal {value} does not fit in {t}, the type of "
                              "the other operand; cast one side explicitly")
    return Expr(n.const(value, t))


def common_type(a: Type, b: Type) -> Type:
    """The type both operands convert to (rules in the module docstring)."""
    if a == b:
        return a
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            return a if a.bits >= b.bits else b
        return a if a.is_float else b
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    bits = builtins.max(a.bits, b.bits)  # this module's max builds Exprs
    if a.code != b.code:
        return Type("int", bits)
    return Type(a.code, bits)


def match_types(a: object, b: object) -> tuple[Expr, Expr]:
    """Both operands as Exprs of one type, honoring weak Python scalars."""
    if _is_weak(a) and not _is_weak(b):
        b = as_expr(b)
        a = _weak_const(a, b.type)
    elif _is_weak(b) and not _is_weak(a):
        a = as_expr(a)
        b = _weak_const(b, a.type)
    else:
        a, b = as_expr(a), as_expr(b)
    t = common_type(a.type, b.type)
    return cast(t, a), cast(t, b)


def _binary(op: type, a: object, b: object) -> Expr:
    a, b = match_types(a, b)
    if a.type.is_bool and op not in (n.EQ, n.NE):
        if op in (n.Add, n.Sub, n.Mul, n.Mod, n.LT, n.LE):
            a, b = cast(int32, a), cast(int32, b)
    return Expr(op(a.node, b.node), a.deps | b.deps)


def _logical(op: type, a: object, b: object) -> Expr:
    a, b = match_types(a, b)
    if a.type.is_float:
        raise DefinitionError(f"`{ {n.And: '&', n.Or: '|', n.Xor: '^'}[op] }` needs bool or "
                              f"integer operands, not {a.type}")
    return Expr(op(a.node, b.node), a.deps | b.deps)


def _true_div(a: object, b: object) -> Expr:
    a, b = match_types(a, b)
    if not a.type.is_float:
        a, b = cast(float32, a), cast(float32, b)
    return Expr(n.Div(a.node, b.node), a.deps | b.deps)


def _floor_div(a: object, b: object) -> Expr:
    a, b = match_types(a, b)
    if a.type.is_float:
        return floor(_true_div(a, b))
    if a.type.is_bool:
        a, b = cast(int32, a), cast(int32, b)
    return Expr(n.Div(a.node, b.node), a.deps | b.deps)


# ------------------------------------------------------------------------ functions


def cast(dtype: object, e: object) -> Expr:
    """`e` converted to `dtype` (rules in halo.ir.nodes)."""
    t = as_type(dtype)
    e = as_expr(e)
    if e.type == t:
        return e
    return Expr(n.Cast(t, e.node), e.deps)


def select(condition: object, true_value: object, false_value: object) -> Expr:
    """`true_value` where `condition` holds, else `false_value` (both are evaluated)."""
    c = as_expr(condition)
    if not c.type.is_bool:
        c = c != 0
    t, f = match_types(true_value, false_value)
    return Expr(n.Select(c.node, t.node, f.node), c.deps | t.deps | f.deps)


def min(a: object, b: object, *rest: object) -> Expr:  # noqa: A001 - the user-facing name
    a, b = match_types(a, b)
    out = Expr(n.Min(a.node, b.node), a.deps | b.deps)
    return min(out, *rest) if rest else out


def max(a: object, b: object, *rest: object) -> Expr:  # noqa: A001
    a, b = match_types(a, b)
    out = Expr(n.Max(a.node, b.node), a.deps | b.deps)
    return max(out, *rest) if rest else out


def clamp(x: object, lo: object, hi: object) -> Expr:
    """`min(max(x, lo), hi)`."""
    return min(max(x, lo), hi)


def _float_of(e: object) -> Expr:
    e = as_expr(e)
    return e if e.type.is_float else cast(float32, e)


def _math(name: str, *args: object) -> Expr:
    if len(args) == 2:  # types first, so a Python literal stays weak: pow(f16, 2.0) is f16
        args = match_types(*args)
    exprs = [_float_of(a) for a in args]
    deps = frozenset().union(*(e.deps for e in exprs))
    return Expr(n.Call(exprs[0].type, name, tuple(e.node for e in exprs), n.CallKind.MATH), deps)


def sqrt(e: object) -> Expr: return _math("sqrt", e)
def exp(e: object) -> Expr: return _math("exp", e)
def log(e: object) -> Expr: return _math("log", e)
def sin(e: object) -> Expr: return _math("sin", e)
def cos(e: object) -> Expr: return _math("cos", e)
def tanh(e: object) -> Expr: return _math("tanh", e)
def floor(e: object) -> Expr: return _math("floor", e)
def ceil(e: object) -> Expr: return _math("ceil", e)
def round(e: object) -> Expr: return _math("round", e)  # noqa: A001 - half to even
def pow(a: object, b: object) -> Expr: return _math("pow", a, b)  # noqa: A001


def abs(e: object) -> Expr:  # noqa: A001
    """Absolute value, keeping the type (as NumPy does)."""
    e = as_expr(e)
    if e.type.is_bool or e.type.is_uint:
        return e
    return Expr(n.Call(e.type, "abs", (e.node,), n.CallKind.MATH), e.deps)
