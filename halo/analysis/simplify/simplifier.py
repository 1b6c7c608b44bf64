"""The simplifier driver: bottom-up rewriting with the rule tables, plus statement rules.

`simplify(node)` returns an equivalent Expr or Stmt; `can_prove(cond)` says whether `cond`
simplifies to the constant true. Equivalence is under the semantics of nodes.py, with one
assumption, the one Halide makes for index arithmetic: int32 and int64 expressions don't
overflow. Rules that rely on it are in the NO_OVERFLOW domain; narrower and unsigned
integers wrap, and for them only rules exact under wraparound apply (pattern.py).

Expressions: operands are simplified first; a node whose operands are all constants folds
(fold.py, complete for every operator); commutative operators get their constant operand
on the right (and integer Vars in name order); then the first rule of the node's table
(arith.py, minmax.py, compare.py, cast.py) that applies rewrites it, and the result is
simplified again. Inside a `For` with constant bounds, or under a `LetStmt`/`Let`, the
variable's constant range is known, and rules that consult bounds use it.

Statements (never moved across one another, so nothing crosses a Load or Store):
  * For: an extent <= 0, or an empty body, is a no-op; a serial loop of extent 1 becomes
    `LetStmt(var, min, body)`; other kinds keep their loops.
  * IfThenElse with a constant condition is the chosen branch; empty branches go.
  * LetStmt / Let bound to a Const, a Var, or a Var offset and scaled by constants
    (`v * 64 + 128`: what a loop's region lets are) is substituted, so that differences
    of such lets cancel; unused, it is dropped.
  * Block drops no-ops (`nodes.block`).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from typing import overload

from halo.analysis.simplify import arith, cast, compare, minmax
from halo.analysis.simplify.const_bounds import Bounds, ConstBounds, type_bounds
from halo.analysis.simplify.fold import fold, foldable
from halo.analysis.simplify.linear import LinearForm, LinearForms
from halo.analysis.simplify.pattern import COMMUTATIVE, RuleTable
from halo.analysis.simplify.structure import StructureIds
from halo.ir import nodes as n
from halo.ir.visitor import IRMutator, Node, child_nodes

RULES = RuleTable(arith.RULES, minmax.RULES, compare.RULES, cast.RULES)


@overload
def simplify(node: n.Expr) -> n.Expr: ...
@overload
def simplify(node: n.Stmt) -> n.Stmt: ...


def simplify(node: n.Expr | n.Stmt) -> n.Expr | n.Stmt:
    """An equivalent, simplified `node` (see the module docstring for what that means)."""
    return shared_simplifier().mutate(node)


_SHARED: ContextVar[Simplifier | None] = ContextVar("halo_shared_simplifier", default=None)


@contextmanager
def sharing(simplifier: Simplifier) -> Iterator[None]:
    """Inside, `simplify`, `can_prove` and `shared_simplifier()` use `simplifier` and its
    memos (in this thread): lowering's passes simplify the same expressions many times
    over, a fresh simplifier each time redid two thirds of lowering's simplifications
    (benchmarks/compile_time.py)."""
    token = _SHARED.set(simplifier)
    try:
        yield
    finally:
        _SHARED.reset(token)


def shared_simplifier() -> Simplifier:
    """The simplifier `sharing` installed, or a fresh one outside `sharing` (or while
    the shared one is inside a scope of its own)."""
    shared = _SHARED.get()
    return shared if shared is not None and shared.at_root else Simplifier()


def simplify_where(e: n.Expr, ranges: dict[str, Bounds]) -> n.Expr:
    """`e` simplified where each integer variable named in `ranges` lies in its constant
    range (lo, hi), both ends included."""
    simplifier = Simplifier()
    with ExitStack() as scope:
        for name, bounds in ranges.items():
            scope.enter_context(simplifier._context(name, bounds))
        return simplifier.expr(e)


def can_prove(cond: n.Expr) -> bool:
    """True only when `cond` simplifies to the constant true (False means "don't know")."""
    return is_const_true(simplify(cond))


def is_const_true(e: n.Expr) -> bool:
    """Whether `e` is the bool constant true."""
    return isinstance(e, n.Const) and e.type.is_bool and e.value == 1


def _trivial_var(e: n.Expr) -> str | None:
    """The variable of `e` if it is a Var offset and scaled by constants, else None."""
    while isinstance(e, (n.Add, n.Sub, n.Mul)) and isinstance(e.b, n.Const):
        e = e.a
    return e.name if isinstance(e, n.Var) else None


def _trivial(e: n.Expr) -> bool:
    """Whether a let of `e` is substituted: a constant, or a Var offset and scaled by
    constants (integer only: float arithmetic isn't re-associated)."""
    return isinstance(e, n.Const) or (
        _trivial_var(e) is not None and (isinstance(e, n.Var) or not e.type.is_float))


def _is_no_op(s: n.Stmt | None) -> bool:
    return s is None or s == n.NO_OP


def _canonical_order(e: n.Expr) -> n.Expr:
    """Commutative operands with a constant on the right, and integer Vars in name order.
    Float min/max keep their order: np.minimum(0.0, -0.0) is -0.0 but np.minimum(-0.0,
    0.0) is 0.0."""
    if type(e) not in COMMUTATIVE or (isinstance(e, (n.Min, n.Max)) and e.type.is_float):
        return e
    a, b = e.a, e.b
    swap = isinstance(a, n.Const) and not isinstance(b, n.Const)
    swap |= (a.type.is_integer and isinstance(a, n.Var) and isinstance(b, n.Var)
             and a.name > b.name)
    return type(e)(b, a) if swap else e


@dataclass(frozen=True)
class _Context:
    """A context of simplification: the ranges of variables (`scope`) and the variables
    replaced, with what the simplifier memoizes in it: results by node identity (the
    memo keeps the nodes alive, so identities stay unique) and by structure number, and
    the constant bounds. `children` are the contexts made from it by one more range or
    replacement, which sibling loops and unrolled copies meet again: entering one costs
    a lookup, not a key of the whole scope (a chain of lets made that quadratic)."""
    scope: dict[str, Bounds]
    replacements: dict[str, n.Expr]
    by_identity: dict[int, tuple[n.Expr, n.Expr]] = field(default_factory=dict)
    by_structure: dict[int, n.Expr] = field(default_factory=dict)
    children: dict[tuple, _Context] = field(default_factory=dict)

    @cached_property
    def const_bounds(self) -> ConstBounds:
        return ConstBounds(self.scope)


class Simplifier(IRMutator):
    """Simplifies statements and expressions (`mutate`; `expr` for an expression). One
    instance may serve many calls on IR that shares subtrees: results are memoized by node
    identity and by structure (structure.py), per context of known variable ranges and
    replaced variables (`_Context`). `simplify` uses a fresh one per call."""

    def __init__(self) -> None:
        self._structure = StructureIds()
        self._linear_forms = LinearForms(self._structure)
        # Results by structure and what the context says of the expression's variables
        # only (`_context_key`): a loop that partitioning copied or gave new bounds
        # changes the context of its whole body, yet most of the body doesn't read it
        # (benchmarks/compile_time.py).
        self._by_context: dict[tuple[int, frozenset], n.Expr] = {}
        # The variables each statement reads, by identity: whether a let's body uses it
        # was a walk of the body per let, quadratic in a chain of lets
        # (benchmarks/compile_time.py).
        self._statement_names: dict[int, tuple[n.Stmt, frozenset[str]]] = {}
        self._enter(_Context({}, {}))

    @property
    def at_root(self) -> bool:
        """Whether no variable range or replacement is in force (between calls)."""
        return not self._scope and not self._replacements

    # ---------------------------------------------------- what rules may ask (pattern.Analysis)

    def bounds(self, e: n.Expr) -> Bounds:
        """Constant bounds of an integer or bool expression in the current scope."""
        return self._const_bounds.of(e)

    def linear(self, e: n.Expr) -> LinearForm:
        """The exact linear form of an integer expression."""
        return self._linear_forms.of(e)

    def form_bounds(self, form: LinearForm) -> Bounds:
        """Exact constant bounds of a linear form, from the bounds of its atoms."""
        form = self._linear_forms.with_remainders(form)
        lo = hi = form.constant
        for atom, k in form.terms.items():
            alo, ahi = self.bounds(atom.expr)
            lo += k * (alo if k > 0 else ahi)
            hi += k * (ahi if k > 0 else alo)
        return lo, hi

    def recombine_div_mod(self, form: LinearForm) -> LinearForm:
        """`form` with k*c*(y // c) + k*(y % c) replaced by k*y."""
        return self._linear_forms.recombine_div_mod(form)

    def same(self, a: n.Expr, b: n.Expr) -> bool:
        """Whether `a` and `b` are structurally identical (float constants bit for bit)."""
        return self._structure.same(a, b)

    # ------------------------------------------------------------------------ expressions

    def mutate(self, node: Node) -> Node:
        if isinstance(node, n.Expr):
            return self.expr(node)
        # A statement met again in the same context (what a later simplify pass finds
        # of the IR that the passes between left alone) is simplified already.
        hit = self._memo.get(id(node))
        if hit is not None:
            return hit[1]
        result = super().mutate(node)
        self._memo[id(node)] = (node, result)
        self._memo[id(result)] = (result, result)
        return result

    def expr(self, e: n.Expr) -> n.Expr:
        """The simplified form of `e`."""
        if isinstance(e, n.Var):
            return self._replacements.get(e.name, e)
        if isinstance(e, n.Const):
            return e
        hit = self._memo.get(id(e))
        if hit is not None:
            return hit[1]
        # Copies of one expression (unrolled bodies, flattened indices, inlined calls)
        # are simplified once: they were six in seven simplifications
        # (benchmarks/compile_time.py).
        number = self._structure.of(e)
        result = self._by_structure.get(number)
        if result is None:
            key = self._context_key(e, number)
            result = self._by_context.get(key)
            if result is None:
                if isinstance(e, n.Let):
                    result = self._let(e)
                else:
                    result = self._rewrite(self._with_simplified_operands(e))
                self._by_context[key] = result
            self._by_structure[number] = result
        self._memo[id(e)] = (e, result)
        self._memo[id(result)] = (result, result)
        return result

    def _context_key(self, e: n.Expr, number: int) -> tuple[int, frozenset]:
        """`e`'s structure and what the context says of its variables: their ranges,
        their replacements and the ranges of those. Simplifying `e` reads nothing else
        of the context, so contexts that agree on these give the same result."""
        scope, replacements = self._scope, self._replacements
        if not scope and not replacements:
            return number, frozenset()
        facts = []
        for name in self._structure.var_names(e):
            bounds, value = scope.get(name), replacements.get(name)
            if value is not None:
                below = _trivial_var(value)
                value_bounds = None if below is None else scope.get(below)
                facts.append((name, bounds, self._structure.of(value), value_bounds))
            elif bounds is not None:
                facts.append((name, bounds))
        return number, frozenset(facts)

    def _with_simplified_operands(self, e: n.Expr) -> n.Expr:
        """`e` with its operands simplified (the same node if none changed). This is
        `mutate_children` unrolled: two Python frames per level of expression instead of
        four, so deeper expressions fit in the recursion limit, and it is faster."""
        match e:
            case n.BinaryOp(a=a, b=b):
                sa, sb = self.expr(a), self.expr(b)
                return e if sa is a and sb is b else type(e)(sa, sb)
            case n.Not(a=a):
                sa = self.expr(a)
                return e if sa is a else n.Not(sa)
            case n.Cast(type=t, value=v):
                sv = self.expr(v)
                return e if sv is v else n.Cast(t, sv)
            case n.Select(condition=c, true_value=a, false_value=b):
                sc, sa, sb = self.expr(c), self.expr(a), self.expr(b)
                return e if sc is c and sa is a and sb is b else n.Select(sc, sa, sb)
            case n.Load(type=t, name=name, index=i, predicate=p):
                si, sp = self.expr(i), None if p is None else self.expr(p)
                return e if si is i and sp is p else n.Load(t, name, si, sp)
            case n.Ramp(base=b, stride=s, lanes=lanes):
                sb, ss = self.expr(b), self.expr(s)
                return e if sb is b and ss is s else n.Ramp(sb, ss, lanes)
            case n.Broadcast(value=v, lanes=lanes):
                sv = self.expr(v)
                return e if sv is v else n.Broadcast(sv, lanes)
        return self.mutate_children(e)

    def _rewrite(self, e: n.Expr) -> n.Expr:
        """`e`, whose operands are simplified, rewritten by folding or by the first rule
        that applies."""
        if foldable(e):
            return fold(e)
        e = _canonical_order(e)
        for result in RULES.rewrites(e, self):
            if not self.same(result, e):
                return self.expr(result)
        return e

    def _let(self, e: n.Let) -> n.Expr:
        return self._simplify_let(e, self.expr)

    def _simplify_let(self, let: n.Let | n.LetStmt, simplify_body):
        """A Let or LetStmt: a `_trivial` value is substituted, an unused binding
        dropped, and the body simplified knowing the value's bounds."""
        value = self.expr(let.value)
        if _trivial(value):
            with self._replacing(let.name, value):
                return simplify_body(let.body)
        with self._bound(let.name, value):
            body = simplify_body(let.body)
        if let.name not in self._var_names(body):
            return body
        if value is let.value and body is let.body:
            return let
        return type(let)(let.name, value, body)

    def _var_names(self, node: Node) -> frozenset[str]:
        """The names of the Vars in `node` (and of the Lets in it, each of which a
        simplified node uses)."""
        if isinstance(node, n.Expr):
            return self._structure.var_names(node)
        hit = self._statement_names.get(id(node))
        if hit is not None:
            return hit[1]
        names: frozenset[str] = frozenset()
        for child in child_nodes(node):
            below = self._var_names(child)
            if not below <= names:
                names = below if not names else names | below
        self._statement_names[id(node)] = (node, names)  # keeps node alive: ids stay unique
        return names

    def _enter(self, context: _Context) -> None:
        """Simplify in `context`, with its memos."""
        self._current = context
        self._scope, self._replacements = context.scope, context.replacements
        self._memo, self._by_structure = context.by_identity, context.by_structure
        self._const_bounds = context.const_bounds

    @contextmanager
    def _context(self, name: str, bounds: Bounds | None = None,
                 value: n.Expr | None = None) -> Iterator[None]:
        """Simplify with the variable `name` in `bounds` or replaced by `value`."""
        parent = self._current
        key = (name, bounds, None if value is None else self._structure.of(value))
        child = parent.children.get(key)
        if child is None:
            child = parent.children[key] = _Context(
                parent.scope if bounds is None else {**parent.scope, name: bounds},
                parent.replacements if value is None else {**parent.replacements,
                                                           name: value})
        self._enter(child)
        try:
            yield
        finally:
            self._enter(parent)

    def _replacing(self, name: str, value: n.Expr):
        """Simplify with the variable `name` replaced by `value` (`_trivial`). The same
        as simplifying the body with `value` substituted, without rebuilding the body
        once per such let first (benchmarks/compile_time.py)."""
        return self._context(name, value=value)

    @contextmanager
    def _bound(self, name: str, value: n.Expr, bounds: Bounds | None = None) -> Iterator[None]:
        """Simplify with the variable `name`, of `value`'s type, known to lie in `bounds`
        (by default the constant bounds of `value`), when that says anything."""
        if value.type.is_float:
            yield
            return
        if bounds is None:
            bounds = self.bounds(value)
        if bounds == type_bounds(value.type):
            yield
            return
        with self._context(name, bounds):
            yield

    # ------------------------------------------------------------------------- statements

    def visit_For(self, s: n.For) -> n.Stmt:
        lo, extent = self.expr(s.min), self.expr(s.extent)
        if isinstance(extent, n.Const) and extent.value <= 0:
            return n.NO_OP
        if s.kind is n.ForKind.SERIAL and isinstance(extent, n.Const) and extent.value == 1:
            return self.mutate(n.LetStmt(s.name, lo, s.body))
        (min_lo, min_hi), (_, extent_hi) = self.bounds(lo), self.bounds(extent)
        with self._bound(s.name, lo, (min_lo, min_hi + extent_hi - 1)):
            body = self.mutate(s.body)
        if _is_no_op(body):
            return n.NO_OP
        if lo is s.min and extent is s.extent and body is s.body:
            return s
        return n.For(s.name, lo, extent, s.kind, body)

    def visit_LetStmt(self, s: n.LetStmt) -> n.Stmt:
        return self._simplify_let(s, self.mutate)

    def visit_IfThenElse(self, s: n.IfThenElse) -> n.Stmt:
        cond = self.expr(s.condition)
        if isinstance(cond, n.Const):
            chosen = s.then_case if cond.value else s.else_case
            return n.NO_OP if chosen is None else self.mutate(chosen)
        then_case = self.mutate(s.then_case)
        else_case = None if s.else_case is None else self.mutate(s.else_case)
        if _is_no_op(else_case):
            else_case = None
        if _is_no_op(then_case):
            if else_case is None:
                return n.NO_OP
            return n.IfThenElse(self.expr(n.Not(cond)), else_case)
        if cond is s.condition and then_case is s.then_case and else_case is s.else_case:
            return s
        return n.IfThenElse(cond, then_case, else_case)

    def visit_Block(self, s: n.Block) -> n.Stmt:
        stmts = [self.mutate(c) for c in s.stmts]
        if all(a is b for a, b in zip(stmts, s.stmts, strict=True)):
            return s
        return n.block(*stmts)
