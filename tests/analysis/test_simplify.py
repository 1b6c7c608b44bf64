"""Tests of the simplifier: before/expected pairs, printed with expr_to_str."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from halo.analysis.simplify import can_prove, simplify, simplify_where
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str, stmt_to_str
from halo.ir.types import (
    ALL_TYPES,
    Type,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    uint8,
    uint32,
)

# ------------------------------------------------------------------- building expressions


class E:
    """Operator sugar over IR nodes, so that cases read like the algebra they test.
    Python numbers take the type of the other operand."""

    def __init__(self, node: n.Expr):
        self.node = node

    def _op(self, cls: type, other: object, swap: bool = False) -> E:
        a, b = self.node, lift(other, self.node.type)
        return E(cls(b, a) if swap else cls(a, b))

    def __add__(self, o): return self._op(n.Add, o)
    def __radd__(self, o): return self._op(n.Add, o, swap=True)
    def __sub__(self, o): return self._op(n.Sub, o)
    def __rsub__(self, o): return self._op(n.Sub, o, swap=True)
    def __mul__(self, o): return self._op(n.Mul, o)
    def __rmul__(self, o): return self._op(n.Mul, o, swap=True)
    def __floordiv__(self, o): return self._op(n.Div, o)
    def __rfloordiv__(self, o): return self._op(n.Div, o, swap=True)
    def __truediv__(self, o): return self._op(n.Div, o)
    def __mod__(self, o): return self._op(n.Mod, o)
    def __lt__(self, o): return self._op(n.LT, o)
    def __le__(self, o): return self._op(n.LE, o)
    def __gt__(self, o): return self._op(n.LT, o, swap=True)
    def __ge__(self, o): return self._op(n.LE, o, swap=True)
    def __and__(self, o): return self._op(n.And, o)
    def __or__(self, o): return self._op(n.Or, o)
    def __xor__(self, o): return self._op(n.Xor, o)
    def __invert__(self): return E(n.Not(self.node))


def lift(value: object, t: Type) -> n.Expr:
    if isinstance(value, E):
        return value.node
    if isinstance(value, bool):
        return n.const(value, bool_)
    return n.const(value, t)


def var(name: str, t: Type = int32) -> E:
    return E(n.Var(name, t))


def c(value: int | float | bool, t: Type = int32) -> E:
    return E(n.const(value, bool_ if isinstance(value, bool) else t))


def eq(a: E, b: object) -> E:
    return a._op(n.EQ, b)


def ne(a: E, b: object) -> E:
    return a._op(n.NE, b)


def mn(a: E, b: object) -> E:
    return a._op(n.Min, b)


def mx(a: E, b: object) -> E:
    return a._op(n.Max, b)


def sel(cond: E, a: E, b: object) -> E:
    return E(n.Select(cond.node, a.node, lift(b, a.node.type)))


def cast(t: Type, a: E) -> E:
    return E(n.Cast(t, a.node))


def call(name: str, *args: E) -> E:
    return E(n.Call(args[0].node.type, name, tuple(a.node for a in args), n.CallKind.MATH))


def let(name: str, value: E, body: E) -> E:
    return E(n.Let(name, value.node, body.node))


def text(e: E) -> str:
    return expr_to_str(simplify(e.node))


x, y, z, a = var("x"), var("y"), var("z"), var("a")
u, w = var("u", uint8), var("w", uint8)
i8, i16 = var("i8", int8), var("i16", int16)
f, g = var("f", float32), var("g", float32)
b, d = var("b", bool_), var("d", bool_)
fmin, fext = var("f.min"), var("f.extent")


def check(cases: list[tuple[E, str]]) -> None:
    failures = [f"{expr_to_str(e.node)} -> {text(e)}, expected {want}"
                for e, want in cases if text(e) != want]
    assert not failures, "\n".join(failures)


# ------------------------------------------------------------------------ constant folding


def test_fold_integer_arithmetic_uses_floor_division_and_wraps() -> None:
    """Integer constants fold with floor // and %, x // 0 == x % 0 == 0, and wraparound."""
    check([
        (c(7) // c(-2), "-4"),
        (c(7) % c(-2), "-1"),
        (c(-7) // c(2), "-4"),
        (c(-7) % c(2), "1"),
        (c(5) // c(0), "0"),
        (c(5) % c(0), "0"),
        (c(2147483647) + c(1), "-2147483648"),
        (c(200, uint8) + c(100, uint8), "uint8(44)"),
        (c(3, uint8) - c(5, uint8), "uint8(254)"),
        (c(-128, int8) // c(-1, int8), "int8(-128)"),
        (c(6) & c(3), "2"),
        (c(6) | c(3), "7"),
        (c(6) ^ c(3), "5"),
        (~c(5, uint8), "uint8(250)"),
        (mn(c(3), c(-4)), "-4"),
        (mx(c(3), c(-4)), "3"),
    ])


def test_fold_float32_rounds_to_float32() -> None:
    """Float32 constants fold in float32 (not float64), with IEEE results for x / 0."""
    total = simplify((c(0.1, float32) + c(0.2, float32)).node)
    assert total == n.const(float(np.float32(0.1) + np.float32(0.2)), float32)
    assert total.value != 0.1 + 0.2
    assert simplify((c(1.0, float32) / c(0.0, float32)).node).value == math.inf
    assert math.isnan(simplify((c(0.0, float32) / c(0.0, float32)).node).value)
    check([
        (c(5.5, float32) % c(-2.0, float32), "-0.5"),
        (c(16777216.0, float32) + c(1.0, float32), "16777216.0"),
        (mn(c(2.0, float32), c(-1.5, float32)), "-1.5"),
    ])


def test_fold_casts() -> None:
    """Casts of constants truncate floats toward zero, wrap integers, and test != 0 for
    bool."""
    check([
        (cast(int32, c(3.9, float32)), "3"),
        (cast(int32, c(-3.9, float32)), "-3"),
        (cast(uint8, c(300)), "uint8(44)"),
        (cast(int8, c(200, uint8)), "int8(-56)"),
        (cast(bool_, c(2)), "True"),
        (cast(bool_, c(0.0, float32)), "False"),
        (cast(int32, c(True)), "1"),
        (cast(float32, c(16777217)), "16777216.0"),
        (cast(float16, c(0.1, float64)), "float16(0.0999755859375)"),
    ])


def test_fold_comparisons_logic_and_select() -> None:
    """Comparisons of constants give bool constants, and a constant condition picks a
    Select branch."""
    nan = c(math.nan, float32)
    check([
        (c(3) < c(4), "True"),
        (c(4) <= c(3), "False"),
        (ne(nan, nan), "True"),
        (nan < c(1.0, float32), "False"),
        (eq(c(0.1, float32), c(float(np.float32(0.1)), float32)), "True"),
        (c(True) & c(False), "False"),
        (~c(True), "False"),
        (sel(c(True), x, y), "x"),
        (sel(c(3) < c(2), x, y), "y"),
        (let("t", c(3), E(n.Var("t")) * E(n.Var("t"))), "9"),
    ])


def test_fold_math_calls() -> None:
    """Math calls of constants fold in the operand's dtype; round is half to even."""
    check([
        (call("sqrt", c(4.0, float32)), "2.0"),
        (call("round", c(2.5, float32)), "2.0"),
        (call("round", c(3.5, float32)), "4.0"),
        (call("floor", c(-1.5, float32)), "-2.0"),
        (call("ceil", c(-1.5, float32)), "-1.0"),
        (call("pow", c(2.0, float32), c(10.0, float32)), "1024.0"),
        (call("exp", c(0.0, float32)), "1.0"),
        (call("log", c(1.0, float32)), "0.0"),
        (call("tanh", c(0.0, float32)), "0.0"),
        (call("abs", c(-3)), "3"),
        (call("abs", c(-128, int8)), "int8(-128)"),
        (call("abs", c(-2.5, float32)), "2.5"),
    ])
    sin = simplify(call("sin", c(1.0, float32)).node)
    assert sin.value == float(np.sin(np.float32(1.0)))


def _random_constant_tree(rng: random.Random, t: Type, depth: int) -> n.Expr:
    def operand(u: Type) -> n.Expr:
        return _random_constant_tree(rng, u, depth - 1)
    if depth == 0 or rng.random() < 0.2:
        if t.is_float:
            return n.const(rng.choice([0.0, -0.0, 1.5, -2.25, 1e30, math.inf, math.nan]), t)
        return n.const(rng.randint(int(t.min_value()), int(t.max_value())), t)
    if t.is_bool:
        u = rng.choice([u for u in ALL_TYPES if not u.is_bool])
        return rng.choice([n.EQ, n.NE, n.LT, n.LE])(operand(u), operand(u))
    kind = rng.choice(["binary", "cast", "select", "math"])
    if kind == "cast":
        return n.Cast(t, operand(rng.choice(ALL_TYPES)))
    if kind == "select":
        return n.Select(operand(bool_), operand(t), operand(t))
    if kind == "math" and t.is_float:
        name = rng.choice(["sqrt", "exp", "log", "sin", "cos", "tanh", "floor", "ceil",
                           "round", "abs"])
        return n.Call(t, name, (operand(t),), n.CallKind.MATH)
    ops = [n.Add, n.Sub, n.Mul, n.Div, n.Mod, n.Min, n.Max]
    if not t.is_float:
        ops += [n.And, n.Or, n.Xor]
    return rng.choice(ops)(operand(t), operand(t))


def test_constant_folding_is_complete() -> None:
    """Any expression whose leaves are all constants, of any type, folds to one Const of
    its type."""
    rng = random.Random(0)
    for _ in range(1500):
        t = rng.choice(ALL_TYPES)
        e = _random_constant_tree(rng, t, 4)
        folded = simplify(e)
        assert isinstance(folded, n.Const) and folded.type == t, expr_to_str(e)


# ----------------------------------------------------------------------- linear arithmetic


def test_linear_forms_reduce_to_constants() -> None:
    """Integer sums that cancel (as in bounds inference) fold to constants."""
    check([
        ((a + 8) - a, "8"),
        ((x * 4 + y) - (y + x * 4), "0"),
        ((fmin + fext) - 1 - fmin + 1, "f.extent"),
        ((x + 7) - x, "7"),
        ((x * 3 + y * 2) - (y + x) * 2, "x"),
    ])


def test_arithmetic_identities_and_canonical_forms() -> None:
    """Identities hold and sums are rebuilt canonically: Vars by name, constants last,
    x - c as x + -c."""
    check([
        (x + 0, "x"),
        (x * 1, "x"),
        (x * 0, "0"),
        (x - x, "0"),
        (c(3) + x, "x + 3"),
        (x - 5, "x - 5"),
        ((x + 2) + 3, "x + 5"),
        ((x + 3) - (y + 5), "x - y - 2"),
        ((x + y) - x, "y"),
        (x * 2 * 3, "x * 6"),
        ((x + 1) * 4, "x * 4 + 4"),
        (c(3) - x, "3 - x"),
        (y + x, "x + y"),
        (c(0) - x, "0 - x"),
        ((x // 4) * 4 + x % 4, "x"),
        ((u + 3) - 5, "u - uint8(2)"),
        (u - u, "uint8(0)"),
        (u * 255, "uint8(0) - u"),
    ])


def test_subtracting_a_constant_becomes_adding_its_negation() -> None:
    """x - 5 is rebuilt as Add(x, -5) (which the printer shows as x - 5)."""
    assert simplify((x - 5).node) == n.Add(x.node, n.const(-5))
    assert simplify(((x + 3) - (y + 5)).node) == n.Add(n.Sub(x.node, y.node), n.const(-2))
    assert simplify(((u + 3) - 5).node) == n.Sub(u.node, n.const(2, uint8))


def test_division_and_modulo_rules_respect_floor_semantics() -> None:
    """Div/Mod rules are those valid for floor division and modulo."""
    check([
        ((x * 4) // 4, "x"),
        ((x * 8) // 4, "x * 2"),
        ((x * 4) // 8, "x // 2"),
        ((x * 8 + y) // 8, "x + y // 8"),
        ((x * 4 + 3) // 4, "x"),
        ((x * 4 - 1) // 4, "x - 1"),
        ((x * 6 + 4) // 4, "x * 3 // 2 + 1"),
        ((x * 4) % 4, "0"),
        ((x + y * 8) % 8, "x % 8"),
        ((x + 9) % 8, "(x + 1) % 8"),
        ((x * 4) % 8, "x % 2 * 4"),
        (x // 1, "x"),
        (x % 1, "0"),
        (x // 0, "0"),
        (x % 0, "0"),
        (x // -1, "0 - x"),
        ((x // 2) // 4, "x // 8"),
        ((x % 8) % 4, "x % 4"),
        (x % x, "0"),
        (cast(int32, u) // 256, "0"),
        (cast(int32, u) % 256, "int32(u)"),
    ])


def test_division_rules_not_applied_where_they_would_be_wrong() -> None:
    """Rewrites that are wrong under floor semantics or wraparound are left alone."""
    check([
        ((x + 1) // 2, "(x + 1) // 2"),
        ((x * 3) // 2, "x * 3 // 2"),
        ((u * 2) // 2, "u * uint8(2) // uint8(2)"),
        ((x % 8) % 3, "x % 8 % 3"),
        ((x // -2) // -2, "x // -2 // -2"),
    ])


# --------------------------------------------------------------------------------- min/max


def test_min_max_rules() -> None:
    """Min/max fold, nest, absorb, and are decided by linear forms differing by a constant."""
    check([
        (mn(x, x), "x"),
        (mn(c(5), x), "min(x, 5)"),
        (mn(x + 1, x + 3), "x + 1"),
        (mx(x + 1, x + 3), "x + 3"),
        (mn(a - 1, a + 1), "a - 1"),
        (mx(x * 4 + y, y + x * 4 + 2), "x * 4 + y + 2"),
        (mn(mn(x, 3), 5), "min(x, 3)"),
        (mx(mx(x, 3), 5), "max(x, 5)"),
        (mn(mx(x, 8), 5), "5"),
        (mx(mn(x, 2), 5), "5"),
        (mn(x, mx(x, y)), "x"),
        (mn(mx(y, x), x), "x"),
        (mx(x, mn(y, x)), "x"),
        (mn(x, mn(y, x)), "min(x, y)"),
        (mn(x + 1, y + 1), "min(x, y) + 1"),
        (mn(cast(int32, u), 255), "int32(u)"),
        (mx(cast(int32, u), 0), "int32(u)"),
        (mn(mn(x, 3), y), "min(min(x, y), 3)"),
    ])


def test_min_max_of_bounds_like_expressions() -> None:
    """Shared terms leave a min/max, a term cancelling one inside absorbs it, and quotient
    rounding is seen through (what keeps the bounds of compute_at chains small)."""
    d = var("d")
    check([
        (mn(x + y, x + 3), "x + min(y, 3)"),
        (mx(x + y, x), "x + max(y, 0)"),
        (mx(a + mn(x, y), a), "a + max(min(x, y), 0)"),
        (x - mx(x, y), "min(x - y, 0)"),
        (x - mn(x, 0), "max(x, 0)"),
        (mx(x, 0) - x + 3, "max(0 - x, 0) + 3"),
        (mn((d // 8) * 8, d - 7), "d - 7"),
        (mx((d // 8) * 8, d - 7), "d // 8 * 8"),
        ((d // 8) * 8 <= d, "True"),
        (mn(x + y, y + x * 2), "y + min(x, x * 2)"),
        (mn((x // 8) * 8, x - 8), "x - 8"),
    ])


def test_min_max_rules_not_applied_where_they_would_be_wrong() -> None:
    """Wrapping types and floats keep min/max that only non-overflowing ints may drop."""
    check([
        (mn(x, y), "min(x, y)"),
        (mn(u + 1, u + 2), "min(u + uint8(1), u + uint8(2))"),
        (mn(u + w, u + 3), "min(u + w, u + uint8(3))"),
        (u - mx(u, w), "u - max(u, w)"),
        (mn((x // 8) * 8, x - 6), "min(x // 8 * 8, x - 6)"),
        (mn(f, f), "f"),
        (mn(f, mx(f, g)), "min(f, max(f, g))"),
    ])


# --------------------------------------------------------------------- comparisons, logic


def test_comparison_rules() -> None:
    """Comparisons are decided from linear forms and bounds, or put in the form P < N + k."""
    check([
        (x < x, "False"),
        (x + 1 < x + 3, "True"),
        (x + 3 < x + 1, "False"),
        (x + 3 < 10, "x < 7"),
        (c(3) < x + 1, "2 < x"),
        (x * 2 < y * 2, "x < y"),
        (x * 2 < 7, "x < 4"),
        (x * 2 <= y * 2 + 3, "x <= y + 1"),
        (x <= x, "True"),
        (x + 1 <= x, "False"),
        (eq(x, x), "True"),
        (eq(x + 1, x), "False"),
        (eq(x + 1, y + 1), "x == y"),
        (ne(x + 1, x), "True"),
        (eq(u + 1, u), "False"),
        (cast(int32, u) < 256, "True"),
        (cast(int32, u) < 0, "False"),
        (eq(cast(int32, u), -1), "False"),
        (u < u + 1, "u < u + uint8(1)"),
        (f < f, "False"),
        (f <= f, "f <= f"),
        (eq(f, f), "f == f"),
    ])


def test_vector_comparisons_whose_lanes_all_agree_are_decided() -> None:
    """A tail mask whose every lane is true (or false) is a constant: ramp < broadcast
    compares the extreme lanes; lanes that disagree leave the comparison alone."""
    def ramp(base: E, stride: int, lanes: int) -> E:
        return E(n.Ramp(base.node, n.const(stride), lanes))

    def broadcast(value: E, lanes: int) -> E:
        return E(n.Broadcast(value.node, lanes))

    check([
        (ramp(x, 1, 16) < broadcast(x + 48, 16), "broadcast(True, 16)"),
        (ramp(x, 1, 16) < broadcast(x + 16, 16), "broadcast(True, 16)"),
        (ramp(x, 1, 16) < broadcast(x + 15, 16), "ramp(x, 1, 16) < broadcast(x + 15, 16)"),
        (ramp(x, 1, 8) < broadcast(x, 8), "broadcast(False, 8)"),
        (ramp(x, 1, 8) < broadcast(x + 3, 8), "ramp(x, 1, 8) < broadcast(x + 3, 8)"),
        (ramp(x + 8, 1, 8) <= broadcast(x + 7, 8), "broadcast(False, 8)"),
        (broadcast(x, 8) <= ramp(x, 2, 8), "broadcast(True, 8)"),
        (ramp(x, -1, 8) < broadcast(x - 7, 8), "broadcast(False, 8)"),
        (ramp(x, 1, 8) < broadcast(y, 8), "ramp(x, 1, 8) < broadcast(y, 8)"),
    ])


def test_logical_rules() -> None:
    """Not flips integer comparisons; And/Or simplify with constants and merge bounds."""
    check([
        (~(x < y), "y <= x"),
        (~(x <= y), "y < x"),
        (~eq(x, y), "x != y"),
        (~ne(x, y), "x == y"),
        (~~b, "b"),
        (~(f < g), "not f < g"),
        ((x < 3) & (x < 5), "x < 3"),
        ((x < 3) | (x < 5), "x < 5"),
        ((c(3) < x) & (c(5) < x), "5 < x"),
        ((x < 3) & (c(2) < x), "False"),
        ((x <= 2) & (c(3) <= x), "False"),
        (b & c(True), "b"),
        (b & c(False), "False"),
        (b | c(True), "True"),
        (b | c(False), "b"),
        (b & ~b, "False"),
        (b | ~b, "True"),
        (b ^ b, "False"),
        (b ^ c(True), "not b"),
        (eq(b, c(False)), "not b"),
        (x & 0, "0"),
        (x | x, "x"),
        (x ^ x, "0"),
    ])


def test_select_rules() -> None:
    """Select with equal branches, negated or repeated conditions, or a min/max shape."""
    check([
        (sel(b, x, x), "x"),
        (sel(~b, x, y), "select(b, y, x)"),
        (sel(b, c(True), c(False)), "b"),
        (sel(b, c(False), c(True)), "not b"),
        (sel(b, sel(b, x, y), z), "select(b, x, z)"),
        (sel(x < y, x, y), "min(x, y)"),
        (sel(x < y, y, x), "max(x, y)"),
        (sel(f < g, f, g), "select(f < g, f, g)"),
    ])


def test_cast_rules() -> None:
    """Casts to the same type go, and lossless inner casts are skipped."""
    check([
        (cast(int32, x), "x"),
        (cast(int32, cast(int16, i8)), "int32(i8)"),
        (cast(int8, cast(int32, i8)), "i8"),
        (cast(uint8, cast(int32, u)), "u"),
        (cast(float32, cast(int32, i16)), "float32(i16)"),
        (cast(int16, cast(int8, x)), "int16(int8(x))"),
        (cast(int32, cast(float32, x)), "int32(float32(x))"),
        (cast(uint32, cast(int32, i8)), "uint32(i8)"),
    ])


def test_float_rules_are_exact_in_ieee() -> None:
    """Only float rewrites exact for -0.0, NaN and inf apply."""
    check([
        (f + 0.0, "f + 0.0"),
        (f * 0.0, "f * 0.0"),
        (f - f, "f - f"),
        (f * 1.0, "f"),
        (f - 0.0, "f"),
        (f - (-0.0), "f - -0.0"),
        (f / 1.0, "f"),
        (f * 2.0 * 3.0, "f * 2.0 * 3.0"),
        (c(2.0, float32) + f, "f + 2.0"),
    ])


def test_can_prove() -> None:
    """can_prove is True only for conditions that simplify to the constant true."""
    assert can_prove((x + 1 > x).node)
    assert can_prove(eq((x * 2) % 2, 0).node)
    assert can_prove((fmin + fext - 1 >= fmin + fext - 2).node)
    assert not can_prove((x < y).node)
    assert not can_prove((c(3) < c(2)).node)
    assert not can_prove(c(1).node)


# ------------------------------------------------------------------------------ statements


def serial(name: str, lo: E, extent: E, body: n.Stmt) -> n.For:
    return n.For(name, lo.node, extent.node, n.ForKind.SERIAL, body)


def provide(name: str, value: E, *args: E) -> n.Provide:
    return n.Provide(name, value.node, tuple(i.node for i in args))


def stmt_text(s: n.Stmt) -> str:
    return stmt_to_str(simplify(s))


def test_loops_of_no_iterations_or_one() -> None:
    """Loops that run no iteration vanish; a serial loop of one iteration becomes its body."""
    body = provide("f", x * 2, x)
    assert stmt_text(serial("x", c(0), c(0), body)) == "pass\n"
    assert stmt_text(serial("x", c(0), (y - y) - 1, body)) == "pass\n"
    assert stmt_text(serial("x", c(5), c(1), body)) == "f[5] = 10\n"
    assert stmt_text(serial("x", y, c(1), body)) == "f[y] = y * 2\n"
    vector = n.For("x", n.const(0), n.const(1), n.ForKind.VECTORIZED, body)
    assert stmt_text(vector) == "for x in vectorized(1):\n  f[x] = x * 2\n"


def test_loop_variable_range_is_used_inside_the_loop() -> None:
    """Inside a loop with constant bounds, the loop variable's range decides min, %, <."""
    loop = serial("x", c(0), c(8), n.block(
        provide("f", mn(x, 7) + x % 8, x),
        n.IfThenElse((x < 8).node, provide("g", x // 8, x))))
    assert stmt_text(loop) == "for x in range(8):\n  f[x] = x * 2\n  g[x] = 0\n"


def test_if_let_and_block_rules() -> None:
    """Constant conditions pick a branch, trivial lets (a constant, a variable offset and
    scaled by constants) are substituted, unused ones dropped, and empty statements leave
    blocks."""
    then = provide("f", c(1), x)
    assert stmt_text(n.IfThenElse(c(True).node, then, provide("f", c(2), x))) == "f[x] = 1\n"
    assert stmt_text(n.IfThenElse((c(3) < c(2)).node, then)) == "pass\n"
    assert stmt_text(n.IfThenElse(b.node, n.NO_OP)) == "pass\n"
    assert stmt_text(n.IfThenElse(b.node, n.NO_OP, then)) == "if not b:\n  f[x] = 1\n"
    assert stmt_text(n.LetStmt("t", (c(3) + 4).node, provide("f", var("t") * 2, x))) \
        == "f[x] = 14\n"
    assert stmt_text(n.LetStmt("t", y.node, provide("f", var("t") + 1, x))) == "f[x] = y + 1\n"
    assert stmt_text(n.LetStmt("t", (y * 3).node, then)) == "f[x] = 1\n"
    offset = n.LetStmt("t", (y * 3 + 4).node, provide("f", var("t") - y * 3, x))
    assert stmt_text(offset) == "f[x] = 4\n"
    kept = n.LetStmt("t", (y * y).node, provide("f", var("t") - var("t") + var("t"), x))
    assert stmt_text(kept) == "t = y * y\nf[x] = t\n"
    assert stmt_text(n.Block((n.NO_OP, then, n.IfThenElse(c(False).node, then)))) \
        == "f[x] = 1\n"


def test_shared_subtrees_under_different_lets_and_loops() -> None:
    """The same body object under lets of different constants, and under loops of
    different ranges, simplifies per its own context (results are memoized per context)."""
    body = provide("f", var("t") * 2 + mn(x, 9), x)
    copies = n.block(n.LetStmt("t", c(1).node, body), n.LetStmt("t", c(2).node, body))
    assert stmt_text(copies) == "f[x] = min(x, 9) + 2\nf[x] = min(x, 9) + 4\n"
    inner = provide("f", mn(x, 9) + x % 16, x)
    loops = n.block(serial("x", c(0), c(8), inner), serial("x", c(0), c(12), inner),
                    serial("x", c(0), c(8), inner))
    assert stmt_text(loops) == ("for x in range(8):\n  f[x] = x * 2\n"
                                "for x in range(12):\n  f[x] = x + min(x, 9)\n"
                                "for x in range(8):\n  f[x] = x * 2\n")


def test_let_bound_to_a_load_is_not_moved_across_a_store() -> None:
    """A let of a Load stays where it is when a Store to the buffer follows."""
    s = n.LetStmt("t", n.Load(int32, "buf", n.const(0)), n.block(
        n.Store("buf", n.const(0), n.const(1)),
        n.Store("out", n.const(0), n.Var("t"))))
    assert simplify(s) is s


def test_unchanged_statement_is_returned_as_is() -> None:
    """simplify returns the very same Stmt object when there is nothing to simplify."""
    s = serial("x", c(0), fext, provide("f", x * 2 + y, x))
    assert simplify(s) is s


def test_let_expression_rules() -> None:
    """Let expressions of a Const, or a Var offset and scaled by constants, are
    substituted; unused ones are dropped."""
    t = var("t")
    check([
        (let("t", y, t + 1), "y + 1"),
        (let("t", x * 3, y), "y"),
        (let("t", x * 3 + 1, t - x * 3), "1"),
        (let("t", x * y, t + t), "let(t=x * y, t * 2)"),
        (let("t", cast(int32, u), mn(t, 300)), "let(t=int32(u), t)"),
    ])


@pytest.mark.parametrize("t", [int32, uint8, int16])
def test_simplify_keeps_the_type(t: Type) -> None:
    """Rewritten expressions keep the type of the original."""
    v = var("v", t)
    for e in [(v + 3) - v, v * 0, mn(v, v), (v * 4) // 4, v - 7]:
        assert simplify(e.node).type == t


def test_simplify_where_variables_lie_in_constant_ranges() -> None:
    """x + 96 < e - 30 holds for x in [0, 0] once e is at least 128, for no e below 127."""
    x, e = n.Var("x", int32), n.Var("e", int32)
    cond = n.LT(n.Add(x, n.const(96)), n.Sub(e, n.const(30)))
    assert simplify_where(cond, {"x": (0, 0), "e": (128, 2**31 - 1)}) == n.const(True, bool_)
    assert simplify_where(cond, {"x": (0, 0), "e": (0, 126)}) == n.const(False, bool_)
    assert not isinstance(simplify_where(cond, {"x": (0, 0)}), n.Const)
