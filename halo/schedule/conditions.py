"""Specialization conditions (boolean Exprs over Params and input extents) as halo
source text and as JSON, for `schedule_source` and the JSON form of schedules."""
from __future__ import annotations

import re

from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.types import as_type, bool_, float32, int32

_EXTENT = re.compile(r"^(\w+)\.extent\.(\d+)$")

# IR node -> Python operator in halo source; integer Div is floor division.
_OPERATORS = {n.Add: "+", n.Sub: "-", n.Mul: "*", n.Mod: "%", n.And: "&", n.Or: "|",
              n.Xor: "^", n.EQ: "==", n.NE: "!=", n.LT: "<", n.LE: "<="}
_FUNCTIONS = {n.Min: "halo.min", n.Max: "halo.max"}
_BINARY = {cls.__name__: cls for cls in [*_OPERATORS, *_FUNCTIONS, n.Div]}


def condition_text(e: n.Expr) -> str:
    """`e` as halo Python code (Params by name, input extents as `inp.shape[i]`), without
    redundant outer parentheses."""
    text = condition_source(e)
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and i < len(text) - 1:
            return text
    return text[1:-1] if text.startswith("(") else text


def condition_source(e: n.Expr) -> str:
    """`e` as halo Python code, each operation in parentheses."""
    match e:
        case n.Const(type=t, value=v):
            text = repr(bool(v)) if t.is_bool else repr(v)
            return text if t in (int32, float32, bool_) else f"halo.cast(halo.{t}, {text})"
        case n.Var(name=name):
            m = _EXTENT.match(name)
            return f"{m.group(1)}.shape[{m.group(2)}]" if m else name
        case n.Cast(type=t, value=v):
            return f"halo.cast(halo.{t}, {condition_source(v)})"
        case n.Not(a=a):
            return f"~{_operand(a, None)}"
        case n.Select(condition=c, true_value=a, false_value=b):
            return f"halo.select({', '.join(condition_source(x) for x in (c, a, b))})"
    cls = type(e)
    if cls in _FUNCTIONS:
        return f"{_FUNCTIONS[cls]}({_operand(e.a, e.b)}, {_operand(e.b, e.a)})"
    if cls in _OPERATORS or cls is n.Div:
        op = _OPERATORS.get(cls) or ("/" if e.a.type.is_float else "//")
        return f"({_operand(e.a, e.b)} {op} {_operand(e.b, e.a)})"
    raise ScheduleError(f"a specialize condition can't contain {type(e).__name__}")


def _operand(e: n.Expr, other: n.Expr | None) -> str:
    """A constant next to an operand of its type prints bare (a weak Python number
    takes the other operand's type again)."""
    if isinstance(e, n.Const) and other is not None and other.type == e.type \
            and not isinstance(other, n.Const):
        return repr(bool(e.value)) if e.type.is_bool else repr(e.value)
    return condition_source(e)


def condition_to_json(e: n.Expr) -> list:
    """`e` as nested lists: ["Const", type, value], ["Var", type, name], [op, a, b], ..."""
    match e:
        case n.Const(type=t, value=v):
            return ["Const", str(t), v]
        case n.Var(name=name, type=t):
            return ["Var", str(t), name]
        case n.Cast(type=t, value=v):
            return ["Cast", str(t), condition_to_json(v)]
        case n.Not(a=a):
            return ["Not", condition_to_json(a)]
        case n.Select(condition=c, true_value=a, false_value=b):
            return ["Select", *(condition_to_json(x) for x in (c, a, b))]
    if type(e).__name__ in _BINARY:
        return [type(e).__name__, condition_to_json(e.a), condition_to_json(e.b)]
    raise ScheduleError(f"a specialize condition can't contain {type(e).__name__}")


def condition_from_json(data: list, inputs: dict, params: dict) -> tuple[n.Expr, frozenset]:
    """The condition that `condition_to_json` wrote, as IR, and the Params and inputs (for
    their extents) it uses, found by name in `inputs` and `params`."""
    deps: set = set()

    def build(d: list) -> n.Expr:
        tag = d[0]
        if tag == "Const":
            return n.const(d[2], as_type(d[1]))
        if tag == "Var":
            m = _EXTENT.match(d[2])
            owner = inputs.get(m.group(1)) if m else params.get(d[2])
            if owner is None:
                raise ScheduleError(f"the specialize condition uses {d[2]}, which is not a "
                                    "Param or input extent of this pipeline")
            deps.add(owner)
            return n.Var(d[2], as_type(d[1]))
        if tag == "Cast":
            return n.Cast(as_type(d[1]), build(d[2]))
        if tag == "Not":
            return n.Not(build(d[1]))
        if tag == "Select":
            return n.Select(build(d[1]), build(d[2]), build(d[3]))
        return _BINARY[tag](build(d[1]), build(d[2]))

    node = build(data)
    return node, frozenset(deps)
