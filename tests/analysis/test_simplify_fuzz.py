"""Differential fuzzing of the simplifier and the interval analysis.

Random integer expressions (int32, uint8, int16; Add, Sub, Mul, Div, Mod, Min, Max,
Select, comparisons, logical and bitwise ops, casts, lets) are evaluated before and after
simplification by the small evaluator below, which implements the semantics of
halo/ir/nodes.py independently of halo (Python ints, explicit wraparound, floor division,
division by zero gives zero). The simplifier assumes that int32 arithmetic does not
overflow, so a sample where the original expression overflows int32 is skipped.
"""
from __future__ import annotations

import operator
import random

import pytest

from halo.analysis.interval import Interval, bounds_of_expr
from halo.analysis.simplify import simplify
from halo.analysis.simplify.const_bounds import ConstBounds
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str, stmt_to_str
from halo.ir.substitute import var_names
from halo.ir.types import Type, bool_, int16, int32, uint8

# ------------------------------------------------------------------------------ evaluator


class Overflow(Exception):
    """An int32 operation whose exact result doesn't fit."""


def _wrap(v: int, t: Type) -> int:
    if t.is_bool:
        return int(v != 0)
    v &= (1 << t.bits) - 1
    if t.is_int and v >= 1 << (t.bits - 1):
        v -= 1 << t.bits
    return v


_ARITH = {
    n.Add: operator.add,
    n.Sub: operator.sub,
    n.Mul: operator.mul,
    n.Div: lambda a, b: a // b if b else 0,
    n.Mod: lambda a, b: a % b if b else 0,
    n.Min: min,
    n.Max: max,
    n.And: operator.and_,
    n.Or: operator.or_,
    n.Xor: operator.xor,
}
_COMPARE = {n.EQ: operator.eq, n.NE: operator.ne, n.LT: operator.lt, n.LE: operator.le}


def evaluate(e: n.Expr, env: dict[str, int], strict: bool = False) -> int:
    """The value of `e`; with `strict`, raise Overflow where int32 arithmetic overflows."""
    match e:
        case n.Const(value=v):
            return int(v)
        case n.Var(name=name):
            return env[name]
        case n.Let(name=name, value=v, body=b):
            return evaluate(b, {**env, name: evaluate(v, env, strict)}, strict)
        case n.Cast(type=t, value=v):
            return _wrap(evaluate(v, env, strict), t)
        case n.Not(a=a):
            v = evaluate(a, env, strict)
            return 1 - v if a.type.is_bool else _wrap(~v, a.type)
        case n.Select(condition=c, true_value=tv, false_value=fv):
            cond, a, b = (evaluate(x, env, strict) for x in (c, tv, fv))
            return a if cond else b
        case n.Compare(a=a, b=b):
            return int(_COMPARE[type(e)](evaluate(a, env, strict), evaluate(b, env, strict)))
        case n.BinaryOp(a=a, b=b):
            exact = _ARITH[type(e)](evaluate(a, env, strict), evaluate(b, env, strict))
            t = e.type
            if strict and t.is_int and t.bits >= 32 and _wrap(exact, t) != exact:
                raise Overflow
            return _wrap(exact, t)
    raise TypeError(f"can't evaluate {e!r}")


# ------------------------------------------------------------------------------ generator

VARS = {int32: ["x", "y", "z"], uint8: ["u", "v"], int16: ["s"]}
INT_TYPES = list(VARS)


class ExprGenerator:
    """Random expressions over VARS, with a few lets."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.scope = {t: list(names) for t, names in VARS.items()}
        self.lets = 0

    def constant(self, t: Type) -> n.Const:
        r = self.rng
        if t == int32:
            return n.const(r.choice([r.randint(-10, 10), r.randint(-200, 200), 0, 1, -1]), t)
        if r.random() < 0.5:
            return n.const(r.randint(-4, 4), t)
        return n.const(r.randint(int(t.min_value()), int(t.max_value())), t)

    def leaf(self, t: Type) -> n.Expr:
        if self.rng.random() < 0.6:
            return n.Var(self.rng.choice(self.scope[t]), t)
        return self.constant(t)

    def integer(self, t: Type, depth: int) -> n.Expr:
        r = self.rng
        if depth <= 0 or r.random() < 0.15:
            return self.leaf(t)
        d = depth - 1
        kind = r.choices(
            ["arith", "mulc", "divc", "div", "minmax", "select", "cast", "bitwise", "let",
             "affine"],
            [30, 8, 10, 4, 12, 8, 8, 3, 3, 12])[0]
        match kind:
            case "arith":
                op = r.choice([n.Add, n.Sub, n.Mul])
                return op(self.integer(t, d), self.integer(t, d))
            case "mulc":
                return n.Mul(self.integer(t, d), self.constant(t))
            case "divc":
                op = r.choice([n.Div, n.Mod])
                return op(self.integer(t, d), n.const(r.choice([2, 3, 4, 8, -3, 16, 1]), t))
            case "div":
                return r.choice([n.Div, n.Mod])(self.integer(t, d), self.integer(t, d))
            case "minmax":
                return r.choice([n.Min, n.Max])(self.integer(t, d), self.integer(t, d))
            case "select":
                return n.Select(self.boolean(d), self.integer(t, d), self.integer(t, d))
            case "cast":
                source = r.choice(INT_TYPES + [bool_])
                value = self.boolean(d) if source == bool_ else self.integer(source, d)
                return n.Cast(t, value)
            case "bitwise":
                if r.random() < 0.25:
                    return n.Not(self.integer(t, d))
                op = r.choice([n.And, n.Or, n.Xor])
                return op(self.integer(t, d), self.integer(t, d))
        if kind == "affine":
            return self.affine(t, d)
        name = f"l{self.lets}"
        self.lets += 1
        value = self.integer(t, d)
        self.scope[t].append(name)
        body = self.integer(t, d)
        self.scope[t].remove(name)
        return n.Let(name, value, body)

    def affine(self, t: Type, depth: int) -> n.Expr:
        """A sum of small multiples of a few shared terms, as bounds inference makes:
        terms cancel, and min/max operands differ by constants or share terms."""
        r = self.rng
        terms = [self.leaf(t) for _ in range(2)] + [self.integer(t, depth - 1)]
        if r.random() < 0.15:  # a value against itself rounded down: min((d // 8)*8, d - 7)
            d, c = r.choice(terms), n.const(r.choice([2, 4, 8]), t)
            rounded = n.Add(n.Mul(n.Div(d, c), c), n.const(r.randint(-9, 9), t))
            return r.choice([n.Min, n.Max])(rounded, n.Add(d, n.const(r.randint(-9, 9), t)))
        e: n.Expr = self.constant(t)
        for term in r.sample(terms, r.randint(1, 3)):
            k = r.choice([1, 1, -1, 2, 8, -4])
            if r.random() < 0.2:  # rounded down to a multiple, as loop splits make
                c = n.const(r.choice([2, 4, 8]), t)
                term = n.Mul(n.Div(term, c), c)
            e = r.choice([n.Add, n.Sub])(e, term if k == 1 else n.Mul(term, n.const(k, t)))
        if r.random() < 0.5:
            other = n.Add(e, self.constant(t)) if r.random() < 0.5 else self.affine(t, depth - 1)
            e = r.choice([n.Min, n.Max])(e, other)
        if r.random() < 0.3:
            e = n.Sub(e, r.choice(terms))
        if r.random() < 0.3:
            e = r.choice([n.Div, n.Mod])(e, n.const(r.choice([2, 4, 8, 3]), t))
        return e

    def boolean(self, depth: int) -> n.Expr:
        r = self.rng
        if depth <= 0 or r.random() < 0.1:
            return n.const(r.random() < 0.5, bool_)
        kind = r.choices(["compare", "and", "not"], [70, 20, 10])[0]
        if kind == "compare":
            t = r.choice(INT_TYPES)
            op = r.choice([n.EQ, n.NE, n.LT, n.LE])
            return op(self.integer(t, depth - 1), self.integer(t, depth - 1))
        if kind == "and":
            op = r.choice([n.And, n.Or, n.Xor])
            return op(self.boolean(depth - 1), self.boolean(depth - 1))
        return n.Not(self.boolean(depth - 1))


def random_env(rng: random.Random) -> dict[str, int]:
    env = {}
    wide = rng.random() < 0.3
    for t, names in VARS.items():
        for name in names:
            if t == int32:
                env[name] = rng.randint(-1000, 1000) if wide else rng.randint(-20, 20)
            else:
                env[name] = rng.randint(int(t.min_value()), int(t.max_value()))
    return env


def _check_same(before: n.Expr, after: n.Expr, env: dict[str, int]) -> None:
    try:
        expected = evaluate(before, env, strict=True)
    except Overflow:
        return
    actual = evaluate(after, env)
    assert actual == expected, (
        f"\n  before: {expr_to_str(before)}\n  after:  {expr_to_str(after)}\n  env: {env}"
        f"\n  expected {expected}, got {actual}")


# ---------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("seed", range(8))
def test_simplify_preserves_value(seed: int) -> None:
    """Simplified random expressions evaluate like the originals wherever int32 doesn't
    overflow."""
    rng = random.Random(seed)
    for _ in range(300):
        gen = ExprGenerator(rng)
        t = rng.choice(INT_TYPES + [bool_])
        e = gen.boolean(4) if t == bool_ else gen.integer(t, rng.randint(1, 5))
        simplified = simplify(e)
        assert simplified.type == e.type
        for _ in range(12):
            _check_same(e, simplified, random_env(rng))


@pytest.mark.parametrize("seed", range(4))
def test_simplify_inside_loop_preserves_value(seed: int) -> None:
    """Expressions simplified inside a loop with constant bounds (where the loop variable's
    range is used) keep their value for every iteration."""
    rng = random.Random(1000 + seed)
    for _ in range(150):
        gen = ExprGenerator(rng)
        e = gen.integer(rng.choice(INT_TYPES), rng.randint(2, 5))
        lo, extent = rng.randint(-10, 10), rng.randint(2, 12)
        loop = n.For("x", n.const(lo), n.const(extent), n.ForKind.SERIAL, n.Evaluate(e))
        simplified = simplify(loop)
        assert isinstance(simplified, n.For) and isinstance(simplified.body, n.Evaluate), \
            stmt_to_str(simplified)
        for x in range(lo, lo + extent):
            env = random_env(rng)
            env["x"] = x
            _check_same(e, simplified.body.value, env)


@pytest.mark.parametrize("seed", range(4))
def test_const_bounds_contain_sampled_values(seed: int) -> None:
    """The simplifier's constant bounds (valid under wraparound) contain every value of
    random expressions with variables sampled from their ranges."""
    rng = random.Random(3000 + seed)
    for _ in range(200):
        scope = _random_scope(rng)
        ranges = {name: (iv.min.value, iv.max.value) for name, iv in scope.items()}
        e = ExprGenerator(rng).integer(rng.choice(INT_TYPES), rng.randint(1, 4))
        lo, hi = ConstBounds(ranges).of(e)
        for _ in range(10):
            env = _sample_env(rng, scope)
            value = evaluate(e, env)
            assert lo <= value <= hi, f"{expr_to_str(e)} in [{lo}, {hi}], {env}: {value}"


def test_simplify_is_idempotent() -> None:
    """Simplifying a simplified random expression changes nothing."""
    rng = random.Random(7)
    for _ in range(400):
        e = ExprGenerator(rng).integer(rng.choice(INT_TYPES), rng.randint(1, 5))
        once = simplify(e)
        assert simplify(once) == once, f"{expr_to_str(e)} -> {expr_to_str(once)}"


def _random_scope(rng: random.Random) -> dict[str, Interval]:
    scope = {}
    for t, names in VARS.items():
        for name in names:
            if rng.random() < 0.25:
                continue  # stays symbolic
            if t == int32:
                lo = rng.randint(-30, 30)
                hi = lo + rng.choice([0, 1, 5, 40])
            else:
                lo = rng.randint(int(t.min_value()), int(t.max_value()))
                hi = min(lo + rng.choice([0, 3, 100]), int(t.max_value()))
            scope[name] = Interval(n.const(lo, t), n.const(hi, t))
    return scope


def _sample_env(rng: random.Random, scope: dict[str, Interval]) -> dict[str, int]:
    env = random_env(rng)
    for name, iv in scope.items():
        lo, hi = iv.min.value, iv.max.value
        env[name] = rng.choice([lo, hi, rng.randint(lo, hi)])
    return env


@pytest.mark.parametrize("seed", range(4))
def test_interval_contains_sampled_values(seed: int) -> None:
    """Values of random expressions, with variables sampled from their scope intervals,
    lie inside bounds_of_expr's interval."""
    rng = random.Random(2000 + seed)
    for _ in range(250):
        gen = ExprGenerator(rng)
        e = gen.integer(rng.choice(INT_TYPES), rng.randint(1, 4))
        scope = _random_scope(rng)
        iv = bounds_of_expr(e, scope)
        for bound in (iv.min, iv.max):
            assert bound is None or bound.type == e.type
            leaked = set() if bound is None else var_names(bound) & set(scope)
            assert not leaked, f"{expr_to_str(e)}: bound {expr_to_str(bound)} uses {leaked}"
        for _ in range(10):
            env = _sample_env(rng, scope)
            try:
                value = evaluate(e, env, strict=True)
                lo = None if iv.min is None else evaluate(iv.min, env, strict=True)
                hi = None if iv.max is None else evaluate(iv.max, env, strict=True)
            except Overflow:
                continue
            shown = (f"{expr_to_str(e)} in [{iv.min and expr_to_str(iv.min)}, "
                     f"{iv.max and expr_to_str(iv.max)}], env {env}: value {value}")
            assert lo is None or lo <= value, shown
            assert hi is None or value <= hi, shown


def _known_range(rng: random.Random, gen: ExprGenerator, t: Type) -> n.Expr:
    """A value whose constant range the simplifier knows but not its value (a load cast
    up, a remainder, a clamp, a mask)."""
    v, k = gen.integer(t, 1), n.const(rng.randint(-4, 16), t)
    return rng.choice([n.Cast(t, n.Var("u", uint8)), n.Mod(v, k), n.Min(v, k), n.Max(v, k),
                       n.And(v, k)])


@pytest.mark.parametrize("seed", range(2))
def test_a_clamp_stays_bounded_through_simplification(seed: int) -> None:
    """The interval of a clamped value is bounded, whatever the value: the simplifier
    drops a min or max that its constant bounds show redundant (`max(x % int32(u8), 0)`
    is `x % int32(u8)`), so the interval analysis, which simplifies first, must know
    those bounds too (fuzz seed 2614: an input's clamped, data-dependent index was
    refused as unbounded). Variables range over their scope intervals, some of them
    unbounded (values read from memory)."""
    rng = random.Random(4000 + seed)
    for _ in range(400):
        scope = _random_scope(rng)
        for name in ("x", "y", "z", "u", "v", "s"):
            if rng.random() < 0.4:
                scope[name] = Interval(None, None)
        t = rng.choice(INT_TYPES)
        gen = ExprGenerator(rng)
        op = rng.choice([n.Add, n.Sub, n.Mul, n.Div, n.Mod, n.Min, n.Max, n.And, n.Or, n.Xor])
        b = _known_range(rng, gen, t) if rng.random() < 0.5 else \
            gen.integer(t, rng.randint(0, 3))
        e = op(gen.integer(t, rng.randint(0, 3)), b)
        clamped = n.Min(n.Max(e, n.const(rng.randint(-10, 10), t)),
                        n.const(rng.randint(10, 100), t))
        iv = bounds_of_expr(clamped, scope)
        assert iv.is_bounded, f"{expr_to_str(clamped)} -> {expr_to_str(simplify(clamped))}"
