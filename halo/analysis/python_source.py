"""Scalar IR expressions as Python source, for code that runs before (or around) compiled
code: a Kernel's region checks and a GPU pipeline's host code (launch sizes, lets).

Index arithmetic (int32/int64, which the IR contract says doesn't overflow, and bools)
becomes plain Python with halo's integer semantics (floor division and modulo, x // 0 ==
x % 0 == 0). Every other pure scalar node (math calls such as `abs`, casts that may wrap
or round, float or narrow-integer arithmetic, bitwise ops) is evaluated by the
simplifier's constant folding, which has exactly the IR's semantics; a Let is evaluated
by substituting its value. Only nodes that read memory (Func and input Calls, Loads) or
vectors can't be evaluated before running: InternalError.
"""
from __future__ import annotations

from halo.analysis.simplify.cast import represents
from halo.analysis.simplify.fold import fold
from halo.errors import InternalError
from halo.ir import nodes as n
from halo.ir.substitute import substitute
from halo.ir.types import Type

_BINARY = {n.Add: "+", n.Sub: "-", n.Mul: "*", n.LT: "<", n.LE: "<=", n.EQ: "==",
           n.NE: "!=", n.And: "and", n.Or: "or"}


def _div(a: int, b: int) -> int:
    return a // b if b else 0


def _mod(a: int, b: int) -> int:
    return a % b if b else 0


def _is_index(t: Type) -> bool:
    """Whether Python ints compute `t` exactly: int32/int64 don't overflow (the IR's
    contract), bools are 0 and 1."""
    return t.lanes == 1 and (t.is_bool or (t.is_int and t.bits >= 32))


def _operands(e: n.Expr) -> tuple[n.Expr, ...] | None:
    """The operands of a pure scalar node that constant folding evaluates, else None."""
    match e:
        case n.BinaryOp(a=a, b=b):
            return (a, b)
        case n.Not(a=a):
            return (a,)
        case n.Cast(value=v):
            return (v,)
        case n.Select(condition=c, true_value=t, false_value=f):
            return (c, t, f)
        case n.Call(kind=n.CallKind.MATH, args=args):
            return args
    return None


def _rebuilt(e: n.Expr, operands: list[n.Expr]) -> n.Expr:
    match e:
        case n.BinaryOp():
            return type(e)(*operands)
        case n.Not():
            return n.Not(*operands)
        case n.Cast(type=t):
            return n.Cast(t, *operands)
        case n.Select():
            return n.Select(*operands)
    return n.Call(e.type, e.name, tuple(operands), e.kind)


def _fold(e: n.Expr, values: tuple) -> int | float:
    """The value of node `e` with its operands' values `values` (by constant folding)."""
    operands = [n.const(v, op.type) for v, op in zip(values, _operands(e), strict=True)]
    return fold(_rebuilt(e, operands)).value


def python_source(e: n.Expr, names: dict[str, str], nodes: list[n.Expr] | None = None) -> str:
    """Python source for the scalar expression `e`, a variable `name` read as `names[name]`
    (by default `v[name]`); the nodes that `_fold` evaluates are appended to `nodes`
    (named `nodes[i]` in the source). The source runs with `HELPERS` in its namespace."""
    nodes = [] if nodes is None else nodes
    match e:
        case n.Const(value=v) if e.type.is_float:
            return repr(float(v))
        case n.Const(value=v):
            return repr(float(v)) if e.type.is_float else repr(int(v))
        case n.Var(name=name):
            return names.setdefault(name, f"v[{name!r}]")
        case n.Let(name=name, value=value, body=body):
            return python_source(substitute(body, {name: value}), names, nodes)
    operands = _operands(e)
    if operands is None or e.type.lanes != 1:
        raise InternalError(f"host code uses {type(e).__name__}, which can't be evaluated "
                            "before the pipeline runs")
    if _is_index(e.type) and all(_is_index(op.type) for op in operands):
        fast = _indexpython_source(e, names, nodes)
        if fast is not None:
            return fast
    index = len(nodes)
    nodes.append(e)
    args = ", ".join(python_source(op, names, nodes) for op in operands)
    return f"_fold(nodes[{index}], ({args},))"


def _indexpython_source(e: n.Expr, names: dict[str, str], nodes: list[n.Expr]) -> str | None:
    """Plain Python for index arithmetic `e` (operands and result int32/int64 or bool),
    or None where it would differ from the IR (bitwise ops, casts that could wrap)."""
    def py(x: n.Expr) -> str:
        return python_source(x, names, nodes)
    match e:
        case n.Div(a=a, b=b):
            return f"_div({py(a)}, {py(b)})"
        case n.Mod(a=a, b=b):
            return f"_mod({py(a)}, {py(b)})"
        case n.Min(a=a, b=b):
            return f"min({py(a)}, {py(b)})"
        case n.Max(a=a, b=b):
            return f"max({py(a)}, {py(b)})"
        case n.Not(a=a) if a.type.is_bool:
            return f"(not {py(a)})"
        case n.Call(name="abs", args=(a,)):
            return f"abs({py(a)})"
        case n.Select(condition=c, true_value=t, false_value=f):
            return f"({py(t)} if {py(c)} else {py(f)})"
        case n.Cast(type=t, value=v) if not t.is_bool and represents(t, v.type):
            return f"int({py(v)})"
        case n.And() | n.Or() if not e.a.type.is_bool:
            return None
        case n.BinaryOp(a=a, b=b) if type(e) in _BINARY:
            return f"({py(a)} {_BINARY[type(e)]} {py(b)})"
    return None


HELPERS = {"_div": _div, "_mod": _mod, "_fold": _fold}
"""The functions the generated source calls (its namespace also needs `nodes`)."""
