"""The pattern language of the simplifier's rule tables.

A rule reads like the algebra it implements:

    Rule(min_(x, max_(x, y)), x),                              # min(x, max(x, y)) -> x
    Rule(min_(min_(x, c1), c2), min_(x, min_(c1, c2)), INT),   # min(min(x, 3), 5) -> min(x, 3)

Patterns are built from wildcards (`x`, `y`, `z`, `w` match any expression; `c1`, `c2`, `c3`
match only constants), literals (`0`, `1`, `TRUE`, `FALSE`) and operators: `+ - * // %
< <= > >= & | ^ ~` and `eq`, `ne`, `min_`, `max_`, `select`, `cast`. A wildcard that
appears twice must match structurally equal expressions. Commutative operators (`+ * & |
^`, `eq`, `ne`, `min_`, `max_`) also match with their operands swapped, except in a
pattern of distinct wildcards only (`min_(x, y)`), which binds the operands in their order:
its rules must be symmetric. `//` builds a `Div` node, `~` a `Not`, `&`/`|` an `And`/`Or`
(logical on bool, bitwise on integers).

The replacement is a pattern, instantiated with the bindings (an untyped literal takes the
type of its sibling operand, or at the root the type of the rewritten expression; the
result is simplified again, so `min_(c1, c2)` folds), or a function returning an
expression or None ("does not apply"). `when` is a predicate. Functions and predicates
receive the bindings they name as parameters, and may also name `e` (the expression being
rewritten), `t` (the type of its operands) and `ctx` (the `Analysis` of the simplifier).

Each rule carries the domain of operand types it is valid for; see `Domain`.
"""
from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from halo.analysis.simplify.linear import LinearForm
from halo.ir import nodes as n
from halo.ir.types import Type, bool_


class Domain(Enum):
    """The operand types a rule is valid for."""

    ANY = "any type"
    INT = "integers (int and uint of any width): exact under wraparound"
    NO_OVERFLOW = "int32 and int64: assumes the expression does not overflow"
    FLOAT = "floats: exact in IEEE arithmetic"
    BOOL = "bool"

    def admits(self, t: Type) -> bool:
        if self is Domain.ANY:
            return True
        if self is Domain.INT:
            return t.is_integer
        if self is Domain.NO_OVERFLOW:
            return no_overflow(t)
        if self is Domain.FLOAT:
            return t.is_float
        return t.is_bool


ANY, INT, NO_OVERFLOW, FLOAT, BOOL = Domain


def no_overflow(t: Type) -> bool:
    """Whether the simplifier may assume arithmetic of type `t` never overflows: signed
    integers of 32 bits or more (index arithmetic), as in Halide. Narrower and unsigned
    integers wrap, and only rules exact under wraparound apply to them."""
    return t.is_int and t.bits >= 32


def fits(value: int, t: Type) -> bool:
    """Whether the integer `value` is representable in `t` without wrapping."""
    return t.min_value() <= value <= t.max_value()


class Analysis(Protocol):
    """What function rules may ask the simplifier about integer expressions."""

    def bounds(self, e: n.Expr) -> tuple[int, int]:
        """Constant bounds of `e`, valid under wraparound (const_bounds.py)."""

    def linear(self, e: n.Expr) -> LinearForm:
        """The exact linear form of `e` (linear.py)."""

    def form_bounds(self, form: LinearForm) -> tuple[int, int]:
        """Exact constant bounds of a linear form, from the bounds of its atoms."""

    def recombine_div_mod(self, form: LinearForm) -> LinearForm:
        """`form` with k*c*(y // c) + k*(y % c) replaced by k*y (linear.py)."""

    def same(self, a: n.Expr, b: n.Expr) -> bool:
        """Whether `a` and `b` are structurally identical (structure.py)."""


# ------------------------------------------------------------------------------ patterns


class Pattern:
    """Base of pattern nodes; Python operators build larger patterns."""

    __slots__ = ()

    def __add__(self, other: object) -> Pattern:
        return Op(n.Add, (self, lift(other)))

    def __radd__(self, other: object) -> Pattern:
        return Op(n.Add, (lift(other), self))

    def __sub__(self, other: object) -> Pattern:
        return Op(n.Sub, (self, lift(other)))

    def __rsub__(self, other: object) -> Pattern:
        return Op(n.Sub, (lift(other), self))

    def __mul__(self, other: object) -> Pattern:
        return Op(n.Mul, (self, lift(other)))

    def __rmul__(self, other: object) -> Pattern:
        return Op(n.Mul, (lift(other), self))

    def __floordiv__(self, other: object) -> Pattern:
        return Op(n.Div, (self, lift(other)))

    def __rfloordiv__(self, other: object) -> Pattern:
        return Op(n.Div, (lift(other), self))

    def __truediv__(self, other: object) -> Pattern:
        return Op(n.Div, (self, lift(other)))

    def __mod__(self, other: object) -> Pattern:
        return Op(n.Mod, (self, lift(other)))

    def __rmod__(self, other: object) -> Pattern:
        return Op(n.Mod, (lift(other), self))

    def __lt__(self, other: object) -> Pattern:
        return Op(n.LT, (self, lift(other)))

    def __le__(self, other: object) -> Pattern:
        return Op(n.LE, (self, lift(other)))

    def __gt__(self, other: object) -> Pattern:
        return Op(n.LT, (lift(other), self))

    def __ge__(self, other: object) -> Pattern:
        return Op(n.LE, (lift(other), self))

    def __and__(self, other: object) -> Pattern:
        return Op(n.And, (self, lift(other)))

    def __or__(self, other: object) -> Pattern:
        return Op(n.Or, (self, lift(other)))

    def __xor__(self, other: object) -> Pattern:
        return Op(n.Xor, (self, lift(other)))

    def __invert__(self) -> Pattern:
        return Op(n.Not, (self,))


@dataclass(frozen=True, eq=False)
class Wild(Pattern):
    """Matches any expression (only a `Const` when `const_only`) and binds it to `name`."""

    name: str
    const_only: bool = False


@dataclass(frozen=True, eq=False)
class Lit(Pattern):
    """Matches a constant equal to `value` of any type (only bool when `is_bool`: 0 matches
    False too, so `x & 0 -> 0` also reads `x and False -> False`)."""

    value: int | float
    is_bool: bool = False


@dataclass(frozen=True, eq=False)
class Op(Pattern):
    """Matches a node of class `node` whose operands match `args`."""

    node: type
    args: tuple[Pattern, ...]


def lift(value: object) -> Pattern:
    """`value` as a pattern: patterns as they are, Python numbers as literals."""
    if isinstance(value, Pattern):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Lit(value)
    raise TypeError(f"can't use {value!r} in a pattern")


def eq(a: object, b: object) -> Pattern:
    return Op(n.EQ, (lift(a), lift(b)))


def ne(a: object, b: object) -> Pattern:
    return Op(n.NE, (lift(a), lift(b)))


def min_(a: object, b: object) -> Pattern:
    return Op(n.Min, (lift(a), lift(b)))


def max_(a: object, b: object) -> Pattern:
    return Op(n.Max, (lift(a), lift(b)))


def select(c: object, a: object, b: object) -> Pattern:
    return Op(n.Select, (lift(c), lift(a), lift(b)))


def cast(a: object) -> Pattern:
    """A `Cast` to any type (match only; constrain the type with `when`)."""
    return Op(n.Cast, (lift(a),))


x, y, z, w = Wild("x"), Wild("y"), Wild("z"), Wild("w")
c1, c2, c3 = Wild("c1", const_only=True), Wild("c2", const_only=True), Wild("c3", const_only=True)
TRUE, FALSE = Lit(1, is_bool=True), Lit(0, is_bool=True)

COMMUTATIVE = frozenset({n.Add, n.Mul, n.Min, n.Max, n.EQ, n.NE, n.And, n.Or, n.Xor})


def operands(e: n.Expr) -> tuple[n.Expr, ...]:
    """The expression operands of a node that patterns can match, in field order."""
    match e:
        case n.BinaryOp():
            return (e.a, e.b)
        case n.Not():
            return (e.a,)
        case n.Select():
            return (e.condition, e.true_value, e.false_value)
        case n.Cast():
            return (e.value,)
    return ()


def operand_type(e: n.Expr) -> Type:
    """The type a rule's domain is checked against: that of the operands."""
    if isinstance(e, n.Compare):
        return e.a.type
    return e.type


# ------------------------------------------------------------------------------ matching


def _literal_matches(p: Lit, e: n.Expr) -> bool:
    if not isinstance(e, n.Const) or e.value != p.value or (p.is_bool and not e.type.is_bool):
        return False
    # 0.0 == -0.0, but x - 0.0 -> x is exact and x - (-0.0) -> x is not.
    return not e.type.is_float or math.copysign(1, e.value) == math.copysign(1, p.value)


Binds = dict[str, n.Expr]
Same = Callable[[n.Expr, n.Expr], bool]


def _match(p: Pattern, e: n.Expr, binds: Binds, same: Same) -> Iterator[Binds]:
    """Every way `e` matches `p` extending `binds` (patterns are tiny: a handful at most);
    `same` tells whether two expressions are structurally identical."""
    if isinstance(p, Wild):
        bound = binds.get(p.name)
        if bound is None:
            if not p.const_only or isinstance(e, n.Const):
                yield {**binds, p.name: e}
        elif same(bound, e):
            yield binds
    elif isinstance(p, Lit):
        if _literal_matches(p, e):
            yield binds
    elif type(e) is p.node:
        kids = operands(e)
        yield from _match_all(p.args, kids, binds, same)
        if p.node in COMMUTATIVE:
            yield from _match_all(p.args, kids[::-1], binds, same)


def _match_all(ps: tuple[Pattern, ...], es: tuple[n.Expr, ...], binds: Binds,
               same: Same) -> Iterator[Binds]:
    if not ps:
        yield binds
        return
    for b in _match(ps[0], es[0], binds, same):
        yield from _match_all(ps[1:], es[1:], b, same)


def _shape_test(p: Pattern) -> Callable[[n.Expr], bool] | None:
    """`_shape_fits(p, e)` as a function of `e` made once per rule (None: anything fits),
    since most rules fail there (the rules' matching was a sixth of lowering time:
    benchmarks/compile_time.py)."""
    if isinstance(p, Wild):
        return _is_const if p.const_only else None
    if isinstance(p, Lit):
        return _is_const
    node, tests = p.node, [_shape_test(q) for q in p.args]
    if all(test is None for test in tests):
        return lambda e: type(e) is node
    if len(tests) != 2:
        return lambda e: _shape_fits(p, e)
    first, second = (test or _anything for test in tests)
    if node in COMMUTATIVE:
        return lambda e: type(e) is node and (first(e.a) and second(e.b)
                                              or first(e.b) and second(e.a))
    return lambda e: type(e) is node and first(e.a) and second(e.b)


def _is_const(e: n.Expr) -> bool:
    return isinstance(e, n.Const)


def _anything(e: n.Expr) -> bool:
    return True


def _shape_fits(p: Pattern, e: n.Expr) -> bool:
    """A cheap necessary condition for `e` to match `p`: node classes and constness agree,
    in some order of commutative operands. Most rules fail here, before `_match`."""
    if isinstance(p, Wild):
        return not p.const_only or isinstance(e, n.Const)
    if isinstance(p, Lit):
        return isinstance(e, n.Const)
    if type(e) is not p.node:
        return False
    kids = operands(e)
    if all(_shape_fits(q, k) for q, k in zip(p.args, kids, strict=True)):
        return True
    return p.node in COMMUTATIVE and all(
        _shape_fits(q, k) for q, k in zip(p.args, reversed(kids), strict=True))


# ------------------------------------------------------------------------- instantiation


def _build(p: Pattern, binds: dict[str, n.Expr], hint: Type) -> n.Expr:
    """The expression `p` denotes under `binds`; `hint` types a literal at this place."""
    if isinstance(p, Wild):
        return binds[p.name]
    if isinstance(p, Lit):
        return n.const(p.value, bool_.with_lanes(hint.lanes) if p.is_bool else hint)
    if p.node is n.Not:
        return n.Not(_build(p.args[0], binds, hint))
    if p.node is n.Select:
        cond = _build(p.args[0], binds, bool_.with_lanes(hint.lanes))
        return n.Select(cond, *_build_siblings(p.args[1:], binds, hint))
    return p.node(*_build_siblings(p.args, binds, hint))


def _build_siblings(ps: tuple[Pattern, ...], binds: dict[str, n.Expr],
                    hint: Type) -> list[n.Expr]:
    """Operands of one node; literals take the type of the first non-literal sibling."""
    built: list[n.Expr | None] = [None if isinstance(q, Lit) else _build(q, binds, hint)
                                  for q in ps]
    sibling = next((b.type for b in built if b is not None), hint)
    return [b if b is not None else _build(q, binds, sibling)
            for q, b in zip(ps, built, strict=True)]


# ----------------------------------------------------------------------------------- rules


def _parameters(fn: Callable[..., object] | None) -> tuple[str, ...]:
    return () if fn is None else tuple(inspect.signature(fn).parameters)


@dataclass(frozen=True)
class Rule:
    """`pattern -> result` for operands whose type is in `domain`, when `when` holds."""

    pattern: Pattern
    result: Pattern | int | Callable[..., n.Expr | None]
    domain: Domain = ANY
    when: Callable[..., bool] | None = None
    _result_params: tuple[str, ...] = field(init=False, repr=False)
    _when_params: tuple[str, ...] = field(init=False, repr=False)
    _operand_names: tuple[str, ...] = field(init=False, repr=False)
    _fits: Callable[[n.Expr], bool] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.result, (int, float)):
            object.__setattr__(self, "result", lift(self.result))
        result_fn = None if isinstance(self.result, Pattern) else self.result
        object.__setattr__(self, "_result_params", _parameters(result_fn))
        object.__setattr__(self, "_when_params", _parameters(self.when))
        args = self.pattern.args if isinstance(self.pattern, Op) else ()
        plain = all(isinstance(a, Wild) and not a.const_only for a in args)
        names = tuple(a.name for a in args) if plain else ()
        object.__setattr__(self, "_operand_names", names if len(set(names)) == len(args) else ())
        object.__setattr__(self, "_fits", _shape_test(self.pattern))

    def apply(self, e: n.Expr, ctx: Analysis) -> n.Expr | None:
        """The rewrite of `e`, or None when the rule doesn't apply."""
        t = operand_type(e)
        return self._apply(e, t, ctx) if self.domain.admits(t) else None

    def _apply(self, e: n.Expr, t: Type, ctx: Analysis) -> n.Expr | None:
        """`apply`, for `e` whose operand type `t` is in the rule's domain."""
        if self._operand_names:
            # Fast path for patterns like `min_(x, y)`, which bind the operands as they are.
            matches = [dict(zip(self._operand_names, operands(e), strict=True))]
        elif self._fits is None or self._fits(e):
            matches = _match(self.pattern, e, {}, ctx.same)
        else:
            return None
        for binds in matches:
            extra = {"e": e, "t": t, "ctx": ctx}
            if self.when is not None:
                args = {k: binds[k] if k in binds else extra[k] for k in self._when_params}
                if not self.when(**args):
                    continue
            if isinstance(self.result, Pattern):
                return _build(self.result, binds, e.type)
            args = {k: binds[k] if k in binds else extra[k] for k in self._result_params}
            out = self.result(**args)
            if out is not None:
                return out
        return None


class RuleTable:
    """Rules by the node class at the root of their pattern, in table order."""

    def __init__(self, *tables: list[Rule]):
        self._by_root: dict[type, list[Rule]] = {}
        for table in tables:
            for rule in table:
                if not isinstance(rule.pattern, Op):
                    raise TypeError(f"a rule's pattern must be an operator: {rule}")
                self._by_root.setdefault(rule.pattern.node, []).append(rule)
        # The rules of each (root class, operand type), their domains checked once.
        self._admitted: dict[tuple[type, Type], list[Rule]] = {}

    def rewrites(self, e: n.Expr, ctx: Analysis) -> Iterator[n.Expr]:
        """The rewrites of `e` by each rule that applies, in table order."""
        t = operand_type(e)
        key = (type(e), t)
        rules = self._admitted.get(key)
        if rules is None:
            rules = [r for r in self._by_root.get(type(e), ()) if r.domain.admits(t)]
            self._admitted[key] = rules
        for rule in rules:
            result = rule._apply(e, t, ctx)
            if result is not None:
                yield result
