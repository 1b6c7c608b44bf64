"""Structural numbering of expressions (hash-consing).

IR nodes hash and compare structurally, but recompute it recursively every time, which
makes dict keys of big subexpressions cost their size on every lookup.
`StructureIds.of(e)` numbers expressions once, bottom-up, memoized by node identity, so
that two expressions get the same number iff they are structurally identical: like `==`,
except that float constants must also agree in sign (0.0 and -0.0 differ), and that the
operands of an integer min or max may come in either order (`min(a, b) - min(b, a)` is
0: regions clamp the same value in both orders). The
simplifier keys linear-form atoms by these numbers and uses them to match repeated
wildcards and to notice when a rewrite changed nothing.
"""
from __future__ import annotations

import math
from dataclasses import fields
from functools import cache

from halo.ir import nodes as n


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def _expr_fields(e: n.Expr) -> tuple[n.Expr, ...]:
    """The expressions directly inside `e` (Call arguments included), the common node
    classes first (numbering was a sixth of lowering time: benchmarks/compile_time.py)."""
    if isinstance(e, n.BinaryOp):
        return e.a, e.b
    if isinstance(e, (n.Var, n.Const)):
        return ()
    if isinstance(e, n.Broadcast):
        return (e.value,)
    if isinstance(e, n.Ramp):
        return e.base, e.stride
    if isinstance(e, n.Load):
        return (e.index,) if e.predicate is None else (e.index, e.predicate)
    found = []
    for name in _field_names(type(e)):
        value = getattr(e, name)
        if isinstance(value, n.Expr):
            found.append(value)
        elif isinstance(value, tuple):
            found.extend(v for v in value if isinstance(v, n.Expr))
    return tuple(found)


def _binary_key(e: n.BinaryOp, a: int, b: int) -> tuple:
    """The structure of a binary operation whose operands are numbered a and b: integer
    min and max commute (float ones don't: min(0.0, -0.0) is its first operand)."""
    if isinstance(e, (n.Min, n.Max)) and not e.type.is_float and b < a:
        a, b = b, a
    return type(e), a, b


class StructureIds:
    """Numbers of expressions by structure (see the module docstring)."""

    def __init__(self) -> None:
        self._by_object: dict[int, tuple[n.Expr, int]] = {}
        self._by_structure: dict[tuple, int] = {}
        self._names: dict[int, frozenset[str]] = {}

    def of(self, e: n.Expr) -> int:
        """The number of `e`'s structure."""
        hit = self._by_object.get(id(e))
        if hit is not None:
            return hit[1]
        return self._number_below(e, _RECURSION_DEPTH)

    def _number_below(self, e: n.Expr, depth: int) -> int:
        """`of(e)` for an `e` not numbered yet: recursively while `depth` lasts (numbering
        was a sixth of lowering time: benchmarks/compile_time.py), then iteratively, so
        that deep expressions don't exhaust the Python stack."""
        if depth == 0:
            return self._number_iteratively(e)
        by_object = self._by_object
        numbers = []
        for kid in _expr_fields(e):
            hit = by_object.get(id(kid))
            numbers.append(hit[1] if hit is not None else self._number_below(kid, depth - 1))
        if isinstance(e, n.BinaryOp):
            return self._number(e, _binary_key(e, numbers[0], numbers[1]))
        return self._number(e, self._key(e))

    def _number_iteratively(self, e: n.Expr) -> int:
        """`of(e)`, by an iterative post-order walk."""
        by_object = self._by_object
        stack = [e]
        while stack:
            node = stack[-1]
            if id(node) in by_object:
                stack.pop()
                continue
            pending = [c for c in _expr_fields(node) if id(c) not in by_object]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            self._number(node, self._key(node))
        return by_object[id(e)][1]

    def _key(self, node: n.Expr) -> tuple:
        """The structure of `node`, whose operands are numbered: its class and its
        fields in order, operands by their numbers."""
        if isinstance(node, n.BinaryOp):
            by_object = self._by_object
            return _binary_key(node, by_object[id(node.a)][1], by_object[id(node.b)][1])
        if isinstance(node, n.Var):
            return n.Var, node.name, node.type
        if isinstance(node, n.Const):
            return n.Const, node.type, self._field_key(node.value)
        return (type(node),) + tuple(self._field_key(getattr(node, name))
                                     for name in _field_names(type(node)))

    def _number(self, node: n.Expr, key: tuple) -> int:
        """The number of the structure `key` (made by `of`), recorded for `node`."""
        number = self._by_structure.setdefault(key, len(self._by_structure))
        self._by_object[id(node)] = (node, number)  # keeps node alive: its id stays unique
        return number

    def var_names(self, e: n.Expr) -> frozenset[str]:
        """The names of the Vars in `e` (bound by a Let inside it too), by structure."""
        number = self.of(e)
        names = self._names.get(number)
        if names is not None:
            return names
        by_object, memo = self._by_object, self._names
        # Iterative post-order, so that deep expressions don't exhaust the Python stack.
        stack = [e]
        while stack:
            node = stack[-1]
            node_number = by_object[id(node)][1]
            if node_number in memo:
                stack.pop()
                continue
            kids = _expr_fields(node)
            pending = [c for c in kids if by_object[id(c)][1] not in memo]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            if isinstance(node, n.Var):
                found = frozenset((node.name,))
            else:
                found = _NO_NAMES
                for kid in kids:
                    below = memo[by_object[id(kid)][1]]
                    if not below <= found:
                        found = below if not found else found | below
                if isinstance(node, n.Let) and node.name not in found:
                    found = found | {node.name}
            memo[node_number] = found
        return memo[number]

    def same(self, a: n.Expr, b: n.Expr) -> bool:
        """Whether `a` and `b` are structurally identical."""
        return a is b or self.of(a) == self.of(b)

    def _field_key(self, value: object) -> object:
        if isinstance(value, n.Expr):
            return self._by_object[id(value)][1]
        if isinstance(value, tuple):
            return tuple(self._field_key(v) for v in value)
        if isinstance(value, float):
            return (value, math.copysign(1.0, value))
        return value


_NO_NAMES: frozenset[str] = frozenset()
# Levels of an expression numbered recursively before numbering goes on iteratively.
_RECURSION_DEPTH = 100
