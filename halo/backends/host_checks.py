"""Region checks as Python: the scalar expressions a Kernel evaluates before each run.

`compile_checks(checks)` turns the `RegionCheck`s of a lowered pipeline (integer
expressions over output regions, input extents and Params, each under the condition of
the specialization branches it belongs to, if any) into one Python function,
compiled once per Kernel, that returns the first failing check with its numbers, or None.
It follows halo's integer semantics (floor division and modulo, x // 0 == x % 0 == 0);
these expressions are index arithmetic, which the IR contract says doesn't overflow.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from halo.errors import InternalError
from halo.ir import nodes as n

_BINARY = {n.Add: "+", n.Sub: "-", n.Mul: "*", n.LT: "<", n.LE: "<=", n.EQ: "==",
           n.NE: "!=", n.And: "and", n.Or: "or"}


def _div(a: int, b: int) -> int:
    return a // b if b else 0


def _mod(a: int, b: int) -> int:
    return a % b if b else 0


def _py(e: n.Expr, names: dict[str, str]) -> str:
    """Python source for the scalar integer expression `e`."""
    match e:
        case n.Const(value=v):
            return repr(float(v)) if e.type.is_float else repr(int(v))
        case n.Var(name=name):
            return names.setdefault(name, f"v[{name!r}]")
        case n.Div(a=a, b=b):
            return f"_div({_py(a, names)}, {_py(b, names)})"
        case n.Mod(a=a, b=b):
            return f"_mod({_py(a, names)}, {_py(b, names)})"
        case n.Min(a=a, b=b):
            return f"min({_py(a, names)}, {_py(b, names)})"
        case n.Max(a=a, b=b):
            return f"max({_py(a, names)}, {_py(b, names)})"
        case n.Not(a=a):
            return f"(not {_py(a, names)})"
        case n.Select(condition=c, true_value=t, false_value=f):
            return f"({_py(t, names)} if {_py(c, names)} else {_py(f, names)})"
        case n.Cast(type=t, value=v) if t.is_integer or t.is_bool:
            return f"int({_py(v, names)})"
        case n.Cast(type=t, value=v) if t.is_float:
            return f"float({_py(v, names)})"
        case n.BinaryOp(a=a, b=b) if type(e) in _BINARY:
            return f"({_py(a, names)} {_BINARY[type(e)]} {_py(b, names)})"
    raise InternalError(f"a region check uses {type(e).__name__}, which the host checks "
                        "can't evaluate")


def compile_checks(checks: Sequence) -> Callable[[dict[str, int]], tuple | None]:
    """A function of the argument values (by name) that returns (check, lo, hi, min,
    extent) for the first check that fails, or None when every access is in range."""
    lines = ["def run(v):"]
    for i, c in enumerate(checks):
        lo, hi, lo_ok, extent = (_py(e, {}) for e in (c.lo, c.hi, c.min, c.extent))
        pad = "    "
        if c.when is not None:  # the check of one specialization's branch
            lines.append(f"    if {_py(c.when, {})}:")
            pad = "        "
        lines += [f"{pad}lo, hi, lo_ok, extent = {lo}, {hi}, {lo_ok}, {extent}",
                  f"{pad}if lo <= hi and (lo < lo_ok or hi > lo_ok + extent - 1):",
                  f"{pad}    return checks[{i}], lo, hi, lo_ok, extent"]
    lines.append("    return None")
    namespace = {"_div": _div, "_mod": _mod, "checks": list(checks)}
    exec(compile("\n".join(lines), "<halo region checks>", "exec"), namespace)  # noqa: S102
    return namespace["run"]
