"""Helpers for the pass tests: run the lowering passes up to one of them, find nodes in the
result, and evaluate its integer expressions at chosen values (without the simplifier, so
that these tests check the passes and not the simplifier's current output)."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import halo
from halo.ir import nodes as n
from halo.ir.printer import stmt_to_str
from halo.ir.visitor import walk
from halo.lang.environment import Environment
from halo.lower.context import LowerContext
from halo.lower.pipeline import lower
from halo.target import Target


def context_of(outputs: halo.Func | Sequence[halo.Func]) -> LowerContext:
    """A LowerContext for `outputs` with the realization decisions made."""
    return _lowered(outputs, "decide_realizations", ()).ctx


def lower_until(outputs: halo.Func | Sequence[halo.Func], last: str,
                skip: Sequence[str] = ()) -> tuple[n.Stmt, LowerContext]:
    """The IR after the lowering passes, in order, up to and including the first pass
    named `last` (leaving out those named in `skip`), and the context they shared."""
    lowered = _lowered(outputs, last, skip)
    return lowered.stmt, lowered.ctx


def _lowered(outputs, last: str, skip: Sequence[str]):
    outs = [outputs] if isinstance(outputs, halo.Func) else list(outputs)
    return lower(Environment.of(outs), Target(), stop_after=last, skip=skip)


def nodes_of(node: n.Stmt | n.Expr, cls: type, name: str | None = None) -> list:
    """Every node of class `cls` in `node` (with that `name`, if given), in print order."""
    return [x for x in walk(node)
            if isinstance(x, cls) and (name is None or getattr(x, "name", None) == name)]


def loop_names(node: n.Stmt) -> list[str]:
    """The names of the For loops in `node`, in print order."""
    return [loop.name for loop in nodes_of(node, n.For)]


def loop(node: n.Stmt, name: str) -> n.For:
    """The For loop called `name`."""
    found = nodes_of(node, n.For, name)
    assert len(found) == 1, f"{len(found)} loops named {name} in\n{stmt_to_str(node)}"
    return found[0]


def enclosing_loops(node: n.Stmt, match: Callable[[object], bool]) -> list[str]:
    """Names of the For loops around the first node for which `match` holds, outermost
    first."""
    def search(x, loops: list[str]) -> list[str] | None:
        if match(x):
            return loops
        inner = [*loops, x.name] if isinstance(x, n.For) else loops
        for field in getattr(x, "__dataclass_fields__", {}):
            child = getattr(x, field)
            for c in (child if isinstance(child, tuple) else (child,)):
                for y in (c if isinstance(c, tuple) else (c,)):
                    if isinstance(y, (n.Stmt, n.Expr)):
                        found = search(y, inner)
                        if found is not None:
                            return found
        return None

    found = search(node, [])
    assert found is not None, "no node matches"
    return found


def produce_of(name: str) -> Callable[[object], bool]:
    """Matches the ProducerConsumer node of Func `name`."""
    return lambda x: isinstance(x, n.ProducerConsumer) and x.name == name


def storage_of(name: str) -> Callable[[object], bool]:
    """Matches the Realize or Allocate node of Func `name`."""
    return lambda x: isinstance(x, (n.Realize, n.Allocate)) and x.name == name


def lets_of(node: n.Stmt) -> dict[str, n.Expr]:
    """The value of every LetStmt in `node`, by name (names are unique in halo IR)."""
    return {s.name: s.value for s in nodes_of(node, n.LetStmt)}


def evaluate(e: n.Expr, values: Mapping[str, int],
             lets: Mapping[str, n.Expr] | None = None) -> int:
    """The value of the integer or bool expression `e` when its free variables have
    `values`; names bound by `lets` are evaluated from their definitions. Floor division
    and modulo, as halo defines them."""
    lets = lets or {}

    def ev(x: n.Expr) -> int:
        match x:
            case n.Const(value=v):
                return int(v)
            case n.Var(name=nm) if nm in values:
                return values[nm]
            case n.Var(name=nm) if nm in lets:
                return ev(lets[nm])
            case n.Var(name=nm):
                raise KeyError(f"no value for {nm}")
            case n.Cast(value=v):
                return ev(v)
            case n.Not(a=a):
                return int(not ev(a))
            case n.Select(condition=c, true_value=t, false_value=f):
                return ev(t) if ev(c) else ev(f)
            case n.BinaryOp(a=a, b=b):
                p, q = ev(a), ev(b)
                ops = {n.Add: lambda: p + q, n.Sub: lambda: p - q, n.Mul: lambda: p * q,
                       n.Div: lambda: p // q if q else 0, n.Mod: lambda: p % q if q else 0,
                       n.Min: lambda: min(p, q), n.Max: lambda: max(p, q),
                       n.And: lambda: int(p and q), n.Or: lambda: int(p or q),
                       n.EQ: lambda: int(p == q), n.NE: lambda: int(p != q),
                       n.LT: lambda: int(p < q), n.LE: lambda: int(p <= q)}
                return ops[type(x)]()
        raise TypeError(f"can't evaluate {x!r}")

    return ev(e)
