"""Structural numbering of expressions (hash-consing).

IR nodes hash and compare structurally, but recompute it recursively every time, which
makes dict keys of big subexpressions cost their size on every lookup.
`StructureIds.of(e)` numbers expressions once, bottom-up, memoized by node identity, so
that two expressions get the same number iff they are structurally identical: like `==`,
except that float constants must also agree in sign (0.0 and -0.0 differ). The
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


def _expr_fields(e: n.Expr) -> list[n.Expr]:
    """The expressions directly inside `e` (Call arguments included)."""
    found = []
    for name in _field_names(type(e)):
        value = getattr(e, name)
        if isinstance(value, n.Expr):
            found.append(value)
        elif isinstance(value, tuple):
            found.extend(v for v in value if isinstance(v, n.Expr))
    return found


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
        # Fast paths for the nodes the simplifier builds most: leaves, and binary nodes
        # over numbered operands (numbering was a sixth of lowering time:
        # benchmarks/compile_time.py). The keys are those the general case makes.
        if isinstance(e, n.BinaryOp):
            a, b = self._by_object.get(id(e.a)), self._by_object.get(id(e.b))
            if a is not None and b is not None:
                return self._number(e, (type(e), a[1], b[1]))
        elif isinstance(e, n.Const):
            return self._number(e, (n.Const, e.type, self._field_key(e.value)))
        elif isinstance(e, n.Var):
            return self._number(e, (n.Var, e.name, e.type))
        # Iterative post-order, so that deep expressions don't exhaust the Python stack.
        stack = [e]
        while stack:
            node = stack[-1]
            if id(node) in self._by_object:
                stack.pop()
                continue
            pending = [c for c in _expr_fields(node) if id(c) not in self._by_object]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            self._number(node, (type(node),) + tuple(self._field_key(getattr(node, name))
                                                     for name in _field_names(type(node))))
        return self._by_object[id(e)][1]

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
        # Iterative post-order, so that deep expressions don't exhaust the Python stack.
        stack = [e]
        while stack:
            node = stack[-1]
            if self.of(node) in self._names:
                stack.pop()
                continue
            kids = _expr_fields(node)
            pending = [c for c in kids if self.of(c) not in self._names]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            if isinstance(node, n.Var):
                found = frozenset((node.name,))
            else:
                found = frozenset()
                for kid in kids:
                    found |= self._names[self.of(kid)]
                if isinstance(node, n.Let):
                    found |= {node.name}
            self._names[self.of(node)] = found
        return self._names[number]

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
