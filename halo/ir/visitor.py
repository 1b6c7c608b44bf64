"""Generic traversal of IR trees.

`IRVisitor.visit(node)` calls `visit_<ClassName>` when a subclass defines it and otherwise
visits the children. `IRMutator.mutate(node)` rebuilds bottom-up and returns the *same*
node object when no child changed, so passes that change nothing cost no allocation and
`is` tells whether anything happened.
"""
from __future__ import annotations

from dataclasses import fields
from functools import cache

from halo.ir.nodes import Expr, Stmt

Node = Expr | Stmt

@cache
def _child_fields(cls: type) -> tuple[str, ...]:
    """Names of the fields of `cls` that may hold IR nodes (or tuples of them)."""
    skip = {"type", "name", "kind", "scope"}
    return tuple(f.name for f in fields(cls) if f.name not in skip)


def _children(node: Node):
    for name in _child_fields(type(node)):
        yield name, getattr(node, name)


def _is_node(x: object) -> bool:
    return isinstance(x, (Expr, Stmt))


class IRVisitor:
    def visit(self, node: Node) -> None:
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:
            self.visit_children(node)

    def visit_children(self, node: Node) -> None:
        for _, child in _children(node):
            self._visit_field(child)

    def _visit_field(self, child: object) -> None:
        if _is_node(child):
            self.visit(child)
        elif isinstance(child, tuple):
            for c in child:
                self._visit_field(c)


class IRMutator:
    def mutate(self, node: Node) -> Node:
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            return method(node)
        return self.mutate_children(node)

    def mutate_children(self, node: Node) -> Node:
        changes = {}
        for name, child in _children(node):
            new = self._mutate_field(child)
            if new is not child:
                changes[name] = new
        if not changes:
            return node
        values = {f.name: getattr(node, f.name) for f in fields(type(node))}
        values.update(changes)
        return type(node)(**values)

    def _mutate_field(self, child: object) -> object:
        if _is_node(child):
            return self.mutate(child)
        if isinstance(child, tuple):
            new = tuple(self._mutate_field(c) for c in child)
            return child if all(a is b for a, b in zip(new, child, strict=True)) else new
        return child


class _FunctionMutator(IRMutator):
    def __init__(self, fn):
        self.fn = fn

    def mutate(self, node: Node) -> Node:
        replacement = self.fn(node)
        return replacement if replacement is not None else self.mutate_children(node)


def rewrite(node: Node, fn) -> Node:
    """Top-down rewrite: `fn(n)` returns a replacement for `n` (not visited further)
    or None to descend into `n`'s children."""
    return _FunctionMutator(fn).mutate(node)


def child_nodes(node: Node) -> list[Node]:
    """The nodes directly inside `node` (in tuples too, such as Realize bounds)."""
    kids = []
    for _, child in _children(node):
        if _is_node(child):
            kids.append(child)
        elif isinstance(child, tuple):
            for c in child:
                if _is_node(c):
                    kids.append(c)
                elif isinstance(c, tuple):
                    kids.extend(x for x in c if _is_node(x))
    return kids


def walk(node: Node):
    """Every node of the tree, parents before children."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(child_nodes(n)))
