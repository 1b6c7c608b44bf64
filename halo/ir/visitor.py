"""Generic traversal of IR trees.

`IRVisitor.visit(node)` calls `visit_<ClassName>` when a subclass defines it and otherwise
visits the children. `IRMutator.mutate(node)` rebuilds bottom-up and returns the *same*
node object when no child changed, so passes that change nothing cost no allocation and
`is` tells whether anything happened.
"""
from __future__ import annotations

from dataclasses import fields
from functools import cache, lru_cache

from halo.ir import nodes as n
from halo.ir.nodes import Expr, Stmt

Node = Expr | Stmt


@cache
def _child_fields(cls: type) -> tuple[str, ...]:
    """Names of the fields of `cls` that may hold IR nodes (or tuples of them)."""
    skip = {"type", "name", "kind", "scope"}
    return tuple(f.name for f in fields(cls) if f.name not in skip)


@cache
def _all_fields(cls: type) -> tuple[str, ...]:
    """Names of all the fields of `cls`, in order (its constructor's arguments)."""
    return tuple(f.name for f in fields(cls))


def _children(node: Node):
    for name in _child_fields(type(node)):
        yield name, getattr(node, name)


def _is_node(x: object) -> bool:
    return isinstance(x, (Expr, Stmt))


@lru_cache(maxsize=4096)  # (bounded: some passes make a visitor class per call)
def _handler(visitor: type, node: type):
    """The `visit_<ClassName>` method of class `visitor` for nodes of class `node`, or
    None (looked up once per pair: every node of every pass asks)."""
    return getattr(visitor, "visit_" + node.__name__, None)


class IRVisitor:
    def visit(self, node: Node) -> None:
        method = _handler(type(self), type(node))
        if method is not None:
            method(self, node)
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
        method = _handler(type(self), type(node))
        if method is not None:
            return method(self, node)
        return self.mutate_children(node)

    def mutate_children(self, node: Node) -> Node:
        cls = type(node)
        changes = None
        for name in _child_fields(cls):
            child = getattr(node, name)
            if isinstance(child, (Expr, Stmt)):
                new = self.mutate(child)
            elif isinstance(child, tuple):
                new = self._mutate_field(child)
            else:
                continue
            if new is not child:
                if changes is None:
                    changes = {}
                changes[name] = new
        if changes is None:
            return node
        return cls(*[changes[name] if name in changes else getattr(node, name)
                     for name in _all_fields(cls)])

    def _mutate_field(self, child: object) -> object:
        if _is_node(child):
            return self.mutate(child)
        if isinstance(child, tuple):
            new = tuple(self._mutate_field(c) for c in child)
            return child if all(a is b for a, b in zip(new, child, strict=True)) else new
        return child


class ScopedMutator(IRMutator):
    """A mutator that knows the loops around the node it visits (`loops`, outermost
    first) and the lets (`lets`, by name, as written: `expand_lets` expands them)."""

    def __init__(self, loops: list[n.For] | None = None,
                 lets: dict[str, Expr] | None = None):
        self.loops: list[n.For] = list(loops or [])
        self.lets: dict[str, Expr] = dict(lets or {})

    def visit_For(self, loop: n.For) -> Stmt:
        self.loops.append(loop)
        try:
            return self.mutate_children(loop)
        finally:
            self.loops.pop()

    def visit_LetStmt(self, s: n.LetStmt) -> Stmt:
        outer = self.lets.get(s.name)
        self.lets[s.name] = s.value
        try:
            return self.mutate_children(s)
        finally:
            if outer is None:
                del self.lets[s.name]
            else:
                self.lets[s.name] = outer


class FuncAccessMutator(IRMutator):
    """Rewrites the coordinates of every Provide to, and Func call of, the Func `name`
    (after their children): subclasses say how in `coordinates`."""

    name: str

    def coordinates(self, args: tuple[Expr, ...]) -> tuple[Expr, ...]:
        raise NotImplementedError

    def visit_Provide(self, p: n.Provide) -> Stmt:
        p = self.mutate_children(p)
        if p.name != self.name:
            return p
        return n.Provide(p.name, p.value, self.coordinates(p.args))

    def visit_Call(self, c: n.Call) -> Expr:
        c = self.mutate_children(c)
        if c.name != self.name or c.kind is not n.CallKind.FUNC:
            return c
        return n.Call(c.type, c.name, self.coordinates(c.args), c.kind)


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
    for name in _child_fields(type(node)):
        child = getattr(node, name)
        if isinstance(child, (Expr, Stmt)):
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


def walk_stmts(node: Node):
    """Every statement of the tree, parents before children, not descending into
    expressions (they hold none): a search for a kind of statement (allocations, stores,
    loops) in a big kernel, without visiting its every expression as `walk` does."""
    stack = [node]
    while stack:
        s = stack.pop()
        yield s
        stack.extend(reversed([c for c in child_nodes(s) if isinstance(c, Stmt)]))
