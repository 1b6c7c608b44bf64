"""Regions (boxes) of a Func that a statement reads or writes.

`boxes_touched(node, name)` is the smallest box (one `Interval` per dimension, outermost
first) containing the coordinates of every `Call` to `name` (with `calls`) and/or every
`Provide` to `name` (with `provides`) in `node`, each relaxed over the loops and lets
around it; None if there are none. Bounds inference builds every loop bound and
allocation from it.

The walk keeps a scope of variable intervals (each computed when first looked up):
  * `For(v, min, extent)` binds v to [lo(min), hi(min + extent - 1)], the loop relaxed
    over its whole range (bounds of those expressions in the enclosing scope);
  * `LetStmt` and `Let` bind the name to the interval of the value;
  * `IfThenElse(cond)` tightens, in the then branch, each variable in scope that `cond`
    bounds (conjunctions of v < e, v <= e, e < v, e <= v, v == e), and in the else branch
    those that the negation of `cond` bounds (negated disjunctions of the same); of an
    IfThenElse marked `whole_tiles` (nodes.py), only the else branch is walked; where
    `cond` has no variable in scope (a specialization), both branches are walked apart
    and the box is `select(cond, then box, else box)`;
  * everything else (ProducerConsumer, Realize, Block, ...) is walked as is.
Variables not in scope stay symbolic. For example, in

    for x in range(m, m + e):
      f[x] = g[x - 1] + g[x + 1]

`boxes_touched(loop, "g")` is ([m - 1, e + m],).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, reduce

from halo.analysis.interval import Interval, IntervalAnalysis, depends_on_scope
from halo.analysis.simplify import Simplifier, shared_simplifier
from halo.analysis.simplify.structure import StructureIds
from halo.errors import InternalError
from halo.ir import nodes as n
from halo.ir.visitor import IRVisitor, child_nodes

Box = tuple[Interval, ...]
Fact = Callable[[], Interval | None]


def box_union(a: Box | None, b: Box | None) -> Box | None:
    """The smallest box containing both (None stands for the empty box)."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise InternalError(f"union of boxes of {len(a)} and {len(b)} dimensions")
    intervals = IntervalAnalysis(shared_simplifier())
    return tuple(intervals.union(p, q) for p, q in zip(a, b, strict=True))


@dataclass(frozen=True)
class Access:
    """Which accesses of Func or buffer `name` a box covers: reads (`calls`) and/or
    writes (`provides`)."""
    name: str
    calls: bool = True
    provides: bool = False


def boxes_touched(node: n.Stmt | n.Expr, name: str, *, calls: bool = True,
                  provides: bool = False, scope: Mapping[str, Interval] | None = None,
                  simplifier: Simplifier | None = None,
                  accessed: AccessedNames | None = None) -> Box | None:
    """The box of `name` that `node` reads (`calls`) and/or writes (`provides`), or None
    if it does neither (see the module docstring). A `simplifier` given is used (and its
    memos kept) for the bounds, an `accessed` for which subtrees touch `name`."""
    return boxes_touched_each(node, [Access(name, calls, provides)], scope, simplifier,
                              accessed)[0]


def boxes_touched_each(node: n.Stmt | n.Expr, accesses: Sequence[Access],
                       scope: Mapping[str, Interval] | None = None,
                       simplifier: Simplifier | None = None,
                       accessed: AccessedNames | None = None) -> list[Box | None]:
    """`boxes_touched` for each of `accesses`, in one walk of `node` (which bounds each
    loop and let once for all of them)."""
    finder = _BoxFinder(accesses, _LazyScope(dict(scope or {})),
                        simplifier or shared_simplifier(), accessed or AccessedNames())
    finder.visit(node)
    return finder.boxes()


class AccessedNames:
    """The names of the Funcs and buffers that each node calls or provides, memoized by
    node identity (the memo keeps the nodes alive, so identities stay unique). Bounds
    inference asks it of the same subtrees for every Func: one shared instance walks
    them once, where a walk per Func was a third of the pass
    (benchmarks/compile_time.py)."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[n.Stmt | n.Expr, frozenset[str]]] = {}

    def of(self, node: n.Stmt | n.Expr) -> frozenset[str]:
        """The names `node` calls or provides."""
        hit = self._memo.get(id(node))
        if hit is not None:
            return hit[1]
        # Iterative post-order, so that deep expressions don't exhaust the Python stack.
        memo = self._memo
        stack = [node]
        while stack:
            top = stack[-1]
            if id(top) in memo:
                stack.pop()
                continue
            children = child_nodes(top)
            pending = [c for c in children if id(c) not in memo]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            names = _NO_NAMES
            for c in children:
                below = memo[id(c)][1]
                if not below <= names:
                    names = below if not names else names | below
            if isinstance(top, (n.Call, n.Provide)) and top.name not in names and (
                    not isinstance(top, n.Call) or top.kind is not n.CallKind.MATH):
                names = names | {top.name}
            memo[id(top)] = (top, names)
        return memo[id(node)][1]


_NO_NAMES: frozenset[str] = frozenset()


class _Extreme:
    """The min (or max, per `op`) of expressions added one by one, kept as candidates of
    which the simplifier can order no two, so that a region read by thousands of calls
    stays a shallow min/max; None once an unbounded expression was added."""

    def __init__(self, op: type, simplifier: Simplifier):
        self.op, self.simplifier = op, simplifier
        self.candidates: list[n.Expr] | None = []

    def add(self, e: n.Expr | None) -> None:
        """Take `e` (None: unbounded) into the min/max, dropping candidates it dominates."""
        if self.candidates is None:
            return
        if e is None:
            self.candidates = None
            return
        kept = []
        for c in self.candidates:
            both = self.simplifier.expr(self.op(c, e))
            if self.simplifier.same(both, c):
                return  # e adds nothing
            if not self.simplifier.same(both, e):
                kept.append(c)
        self.candidates = kept + [e]

    def value(self) -> n.Expr | None:
        """The min/max of everything added, simplified (None if unbounded)."""
        if self.candidates is None:
            return None
        return self.simplifier.expr(reduce(self.op, self.candidates))


class _LazyScope(Mapping[str, Interval]):
    """Variable intervals, each computed when first looked up: a walk binds every loop
    and let on the way to a Call, but an access depends on few of them (the lets of
    bounds inference are most of a pipeline: benchmarks/compile_time.py)."""

    def __init__(self, entries: dict[str, Interval | Callable[[], Interval]]):
        self._entries = entries

    def __getitem__(self, name: str) -> Interval:
        entry = self._entries[name]
        if not isinstance(entry, Interval):
            entry = entry()
            self._entries[name] = entry
        return entry

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def bind(self, name: str, interval: Callable[[], Interval]) -> _LazyScope:
        """This scope and `name` in the interval `interval()` computes (once, shared by
        the scopes made from the new one)."""
        return _LazyScope({**self._entries, name: cache(interval)})


class _BoxFinder(IRVisitor):
    """Walks a statement with a scope of variable intervals, collecting a box for each
    access (see the module docstring)."""

    def __init__(self, accesses: Sequence[Access], scope: _LazyScope, simplifier: Simplifier,
                 accessed: AccessedNames):
        self.accesses = list(accesses)
        self.by_name: dict[str, list[int]] = {}
        for i, access in enumerate(self.accesses):
            self.by_name.setdefault(access.name, []).append(i)
        self.scope = scope
        self.simplifier = simplifier
        self.intervals = IntervalAnalysis(self.simplifier)
        self.extremes: list[list[tuple[_Extreme, _Extreme]] | None] = [None] * len(accesses)
        # Expressions already walked in the current scope, by structure: inlining repeats
        # subexpressions, and walking a copy again would find the same boxes.
        self.structure = StructureIds()
        self.walked: set[int] = set()
        self.accessed = accessed

    def boxes(self) -> list[Box | None]:
        """The box found so far of each access, or None where it touched nothing."""
        return [None if extremes is None else
                tuple(Interval(lo.value(), hi.value()) for lo, hi in extremes)
                for extremes in self.extremes]

    def visit(self, node: n.Stmt | n.Expr) -> None:
        # A subtree that never names the Funcs adds nothing to the boxes; skipping it
        # skips the bounds of its loops and lets (most of a pipeline, for most Funcs:
        # benchmarks/compile_time.py).
        if self.accessed.of(node).isdisjoint(self.by_name):
            return
        if isinstance(node, n.Expr):
            number = self.structure.of(node)
            if number in self.walked:
                return
            self.walked.add(number)
        super().visit(node)

    def _bounds(self, e: n.Expr) -> Interval:
        return self.intervals.bounds(e, self.scope)

    def _record(self, name: str, args: tuple[n.Expr, ...], is_call: bool) -> None:
        """Take the coordinates `args` of a call (or provide) of `name` into the boxes of
        the accesses that cover it."""
        recording = [i for i in self.by_name.get(name, ())
                     if (self.accesses[i].calls if is_call else self.accesses[i].provides)]
        if not recording:
            return
        box = [self._bounds(arg) for arg in args]
        for i in recording:
            self._take(i, box)

    def _take(self, i: int, box: Sequence[Interval]) -> None:
        """Widen access i's box to contain `box`."""
        for (lo, hi), interval in zip(self._extremes(i, len(box)), box, strict=True):
            lo.add(interval.min)
            hi.add(interval.max)

    def _extremes(self, i: int, dimensions: int) -> list[tuple[_Extreme, _Extreme]]:
        extremes = self.extremes[i]
        if extremes is None:
            extremes = self.extremes[i] = [
                (_Extreme(n.Min, self.simplifier), _Extreme(n.Max, self.simplifier))
                for _ in range(dimensions)]
        if dimensions != len(extremes):
            raise InternalError(f"{self.accesses[i].name} is accessed with {len(extremes)} "
                                f"and {dimensions} coordinates")
        return extremes

    def _visit_in(self, scope: _LazyScope, node: n.Stmt | n.Expr) -> None:
        saved = self.scope, self.walked
        self.scope, self.walked = scope, set()
        try:
            self.visit(node)
        finally:
            self.scope, self.walked = saved

    def visit_Call(self, e: n.Call) -> None:
        if e.kind is not n.CallKind.MATH:
            self._record(e.name, e.args, is_call=True)
        self.visit_children(e)

    def visit_Provide(self, s: n.Provide) -> None:
        self._record(s.name, s.args, is_call=False)
        self.visit_children(s)

    def visit_For(self, s: n.For) -> None:
        self.visit(s.min)
        self.visit(s.extent)
        last = n.Sub(n.Add(s.min, s.extent), n.const(1, s.min.type))
        scope = self.scope
        self._visit_in(scope.bind(s.name, lambda: Interval(
            self.intervals.bounds(s.min, scope).min, self.intervals.bounds(last, scope).max)),
            s.body)

    def visit_LetStmt(self, s: n.LetStmt) -> None:
        """A chain of lets in one loop, not one Python frame per let: lowering puts a
        few lets per Func and dimension around the pipeline, hundreds for a large one."""
        saved = self.scope, self.walked
        try:
            body: n.Stmt = s
            while isinstance(body, n.LetStmt):
                self.visit(body.value)
                scope, let = self.scope, body
                self.scope = scope.bind(let.name, lambda scope=scope, let=let:
                                        self.intervals.bounds(let.value, scope))
                self.walked = set()
                body = body.body
            self.visit(body)
        finally:
            self.scope, self.walked = saved

    def visit_Let(self, e: n.Let) -> None:
        self._visit_let(e.name, e.value, e.body)

    def _visit_let(self, name: str, value: n.Expr, body: n.Stmt | n.Expr) -> None:
        self.visit(value)
        scope = self.scope
        self._visit_in(scope.bind(name, lambda: self.intervals.bounds(value, scope)), body)

    def visit_IfThenElse(self, s: n.IfThenElse) -> None:
        if n.is_whole_tiles(s.condition):  # the then branch touches what the else does
            self.visit(s.else_case)
            return
        self.visit(s.condition)
        if s.else_case is not None and not depends_on_scope(s.condition, self.scope):
            self._visit_choice(s)
            return
        self._visit_in(self._tightened(s.condition, True), s.then_case)
        if s.else_case is not None:
            self._visit_in(self._tightened(s.condition, False), s.else_case)

    def _visit_choice(self, s: n.IfThenElse) -> None:
        """An IfThenElse whose condition is the same throughout the walk (a specialization:
        no variable in scope): each access's box is `select(condition, then box, else
        box)`, not their union, which would make a branch not taken widen the region of
        the one taken (an input too small for a specialized branch's reads)."""
        branches = []
        for case in (s.then_case, s.else_case):
            finder = _BoxFinder(self.accesses, self.scope, self.simplifier, self.accessed)
            finder.visit(case)
            branches.append(finder.boxes())
        for i, (then_box, else_box) in enumerate(zip(*branches, strict=True)):
            if then_box is None or else_box is None:  # one branch touches nothing
                box = then_box or else_box
            else:
                box = tuple(self.intervals.select(s.condition, t, e)
                            for t, e in zip(then_box, else_box, strict=True))
            if box is not None:
                self._take(i, box)

    # --------------------------------------------------------------- conditions as bounds

    def _tightened(self, cond: n.Expr, truth: bool) -> _LazyScope:
        """The scope, with the variables that `cond == truth` bounds narrowed."""
        scope = self.scope
        for var, fact in self._facts(cond, truth):
            scope = scope.bind(var, lambda outer=scope, var=var, fact=fact:
                               self._narrowed(outer[var], fact()))
        return scope

    def _narrowed(self, interval: Interval, fact: Interval | None) -> Interval:
        return interval if fact is None else self.intervals.intersect(interval, fact)

    def _facts(self, cond: n.Expr, truth: bool) -> list[tuple[str, Fact]]:
        """(variable, interval it lies in, or None if unknown) for each bound that
        `cond == truth` implies; the intervals are computed on first use."""
        match cond:
            case n.Not(a=a) if a.type.is_bool:
                return self._facts(a, not truth)
            case n.And(a=a, b=b) if truth:
                return self._facts(a, True) + self._facts(b, True)
            case n.Or(a=a, b=b) if not truth:
                return self._facts(a, False) + self._facts(b, False)
            case n.LT(a=a, b=b) | n.LE(a=a, b=b) if a.type.is_integer:
                strict = isinstance(cond, n.LT)
                if not truth:  # not (a < b) is b <= a; not (a <= b) is b < a
                    a, b, strict = b, a, not strict
                return self._order_facts(a, b, strict)
            case n.EQ(a=a, b=b) if truth and a.type.is_integer:
                return self._order_facts(a, b, False) + self._order_facts(b, a, False)
        return []

    def _order_facts(self, a: n.Expr, b: n.Expr, strict: bool) -> list[tuple[str, Fact]]:
        """Bounds implied by a < b (strict) or a <= b on a Var side in scope."""
        one = n.const(1 if strict else 0, a.type)
        scope = self.scope

        def below_b() -> Interval | None:
            hi = self.intervals.bounds(b, scope).max
            return None if hi is None else Interval(None, self.simplifier.expr(n.Sub(hi, one)))

        def above_a() -> Interval | None:
            lo = self.intervals.bounds(a, scope).min
            return None if lo is None else Interval(self.simplifier.expr(n.Add(lo, one)), None)
        facts = []
        if isinstance(a, n.Var) and a.name in scope:
            facts.append((a.name, below_b))
        if isinstance(b, n.Var) and b.name in scope:
            facts.append((b.name, above_a))
        return facts
