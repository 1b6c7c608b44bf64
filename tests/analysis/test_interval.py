"""Tests of interval arithmetic over symbolic expressions (halo.analysis.interval)."""
from __future__ import annotations

from halo.analysis.interval import Interval, bounds_of_expr
from halo.analysis.simplify import simplify
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str
from halo.ir.substitute import substitute
from halo.ir.types import Type, bool_, float32, int16, int32, uint8, uint32

x, y, m, e = (n.Var(name) for name in ("x", "y", "m", "e"))
f, g = n.Var("f", float32), n.Var("g", float32)
u = n.Var("u", uint8)


def c(value: int | float, t: Type = int32) -> n.Const:
    return n.const(value, t)


def iv(lo: int | float | n.Expr | None, hi: int | float | n.Expr | None,
       t: Type = int32) -> Interval:
    def side(v: int | float | n.Expr | None) -> n.Expr | None:
        return v if v is None or isinstance(v, n.Expr) else n.const(v, t)
    return Interval(side(lo), side(hi))


def shown(i: Interval) -> str:
    def side(v: n.Expr | None) -> str:
        return "None" if v is None else expr_to_str(v)
    return f"[{side(i.min)}, {side(i.max)}]"


def bounds(expr: n.Expr, **scope: Interval) -> str:
    return shown(bounds_of_expr(expr, scope))


def call(name: str, t: Type, *args: n.Expr, kind: n.CallKind = n.CallKind.FUNC) -> n.Call:
    return n.Call(t, name, args, kind)


def test_interval_constructors_and_properties() -> None:
    """point, everything, is_bounded and is_point describe the interval."""
    assert Interval.point(x) == Interval(x, x) and Interval.point(x).is_point
    assert Interval.everything() == Interval(None, None)
    assert not Interval.everything().is_bounded
    assert not Interval(x, None).is_bounded
    assert iv(0, 3).is_bounded and not iv(0, 3).is_point


def test_union_and_intersect_are_simplified() -> None:
    """union takes the min of mins and max of maxes; intersect the reverse; None is
    unbounded."""
    assert shown(iv(0, 5).union(iv(3, 9))) == "[0, 9]"
    assert shown(Interval.union(Interval(m, n.Add(m, c(3))), Interval(n.Sub(m, c(1)), m))) \
        == "[m - 1, m + 3]"
    assert shown(iv(0, None).union(iv(3, 9))) == "[0, None]"
    assert shown(iv(0, 5).intersect(iv(3, 9))) == "[3, 5]"
    assert shown(iv(None, 5).intersect(iv(3, None))) == "[3, 5]"


def test_leaves() -> None:
    """Constants are points; Vars are their scope interval, or themselves when not in
    scope."""
    assert bounds(c(4)) == "[4, 4]"
    assert bounds(x) == "[x, x]"
    assert bounds(x, x=iv(0, 9)) == "[0, 9]"


def test_add_sub() -> None:
    """Sums add endpoints; differences subtract the opposite endpoints; a variable that
    cancels (x + y - x) does not widen the interval."""
    assert bounds(n.Add(x, y), x=iv(0, 10), y=Interval(m, n.Add(m, c(5)))) == "[m, m + 15]"
    assert bounds(n.Sub(x, y), x=iv(0, 10), y=iv(2, 3)) == "[-3, 8]"
    assert bounds(n.Sub(n.Add(x, y), x), x=iv(0, 10), y=iv(2, 3)) == "[2, 3]"
    assert bounds(n.Add(x, y), x=iv(0, None)) == "[y, None]"


def test_mul() -> None:
    """Products by a constant respect its sign; products of intervals take the extreme
    corners."""
    assert bounds(n.Mul(x, c(3)), x=iv(-1, 4)) == "[-3, 12]"
    assert bounds(n.Mul(x, c(-3)), x=iv(-1, 4)) == "[-12, 3]"
    assert bounds(n.Mul(x, c(0)), x=iv(None, None)) == "[0, 0]"
    assert bounds(n.Mul(x, y), x=iv(-2, 3), y=iv(4, 5)) == "[-10, 15]"
    assert bounds(n.Mul(x, y), x=Interval(c(0), m), y=Interval(c(0), e)) == "[0, e * m]"
    assert bounds(n.Mul(x, y), x=iv(0, None), y=iv(1, 2)) == "[0, None]"
    assert bounds(n.Mul(x, y), x=iv(0, None), y=iv(-2, 1)) == "[None, None]"


def test_product_with_an_operand_of_known_sign_keeps_the_other_side() -> None:
    """By a bounded operand of known sign, a product is monotonic in the other operand,
    so each bounded side of that one bounds a side of the product: (x % 2) * min(y, 13)
    is at most 13, as the simplifier's constant bounds know."""
    assert bounds(n.Mul(x, y), x=iv(0, 1), y=iv(None, 13)) == "[None, 13]"
    assert bounds(n.Mul(x, y), x=iv(0, 3), y=iv(-2, None)) == "[-6, None]"
    assert bounds(n.Mul(x, y), x=iv(-3, -1), y=iv(None, 5)) == "[-15, None]"
    assert bounds(n.Mul(x, y), x=iv(-1, 1), y=iv(None, 5)) == "[None, None]"


def test_div() -> None:
    """Floor division by a constant is sign-aware; by a variable of known sign, the
    endpoint quotients; else within [-|x|, |x|]."""
    assert bounds(n.Div(x, c(2)), x=iv(-7, 7)) == "[-4, 3]"
    assert bounds(n.Div(x, c(-2)), x=iv(-7, 7)) == "[-4, 3]"
    assert bounds(n.Div(x, c(0)), x=iv(-7, 7)) == "[0, 0]"
    assert bounds(n.Div(x, c(4)), x=Interval(m, None)) == "[m // 4, None]"
    assert bounds(n.Div(x, y), x=iv(-100, 100), y=iv(1, 10)) == "[-100, 100]"
    assert bounds(n.Div(x, y), x=iv(0, 100), y=iv(-1, 1)) == "[-100, 100]"
    assert bounds(n.Div(f, c(2.0, float32)), f=iv(1.0, 3.0, float32)) == "[0.5, 1.5]"


def test_division_by_a_divisor_of_known_sign_and_an_unbounded_side() -> None:
    """Floor division by a divisor of known sign is monotonic in the dividend: each side
    comes from one end of it, and an unbounded divisor contributes its limit (0, or -1
    for a quotient approaching 0 from below)."""
    assert bounds(n.Div(x, y), x=iv(3, None), y=iv(None, -1)) == "[None, -1]"
    assert bounds(n.Div(x, y), x=iv(-7, 9), y=iv(2, None)) == "[-4, 4]"
    assert bounds(n.Div(x, y), x=iv(None, 9), y=iv(2, 3)) == "[None, 4]"
    assert bounds(n.Div(x, y), x=iv(-7, 9), y=iv(None, -2)) == "[-5, 3]"
    assert bounds(n.Div(f, g), f=iv(-1.0, 4.0, float32), g=iv(2.0, None, float32)) == \
        "[-0.5, 2.0]"


def test_mod() -> None:
    """x % c lies in [0, c - 1], or in x's interval when that is already inside; a point
    operand gives a point."""
    assert bounds(n.Mod(x, c(8))) == "[x % 8, x % 8]"
    assert bounds(n.Mod(x, c(8)), x=iv(None, None)) == "[0, 7]"
    assert bounds(n.Mod(x, c(8)), x=iv(2, 5)) == "[2, 5]"
    assert bounds(n.Mod(x, c(8)), x=iv(2, 9)) == "[0, 7]"
    assert bounds(n.Mod(x, c(-8)), x=iv(None, None)) == "[-7, 0]"
    assert bounds(n.Mod(x, y), y=iv(1, 10)) == "[0, 9]"
    assert bounds(n.Mod(x, y), y=Interval(c(1), e)) == "[0, e - 1]"
    assert bounds(n.Mod(x, y), y=iv(0, 10)) == "[0, 9]"


def test_mod_by_a_divisor_that_may_be_zero_or_of_either_sign() -> None:
    """Integer floor modulo lies between 0 and its divisor, whatever the divisor's sign
    (x % 0 == 0), and a nonnegative x % (b >= 0) is at most x: what the simplifier's
    constant bounds know, so a clamp it drops as redundant leaves the value bounded
    (fuzz seed 2614: max(x % int32(u8), 0) simplified to the unbounded x % int32(u8))."""
    extent = n.Var("inp.extent.0")
    assert bounds(n.Mod(x, extent), x=iv(None, None)) == "[0, max(inp.extent.0 - 1, 0)]"
    assert bounds(n.Mod(x, y), x=iv(None, None), y=iv(-3, 10)) == "[-2, 9]"
    assert bounds(n.Mod(x, y), x=iv(None, None), y=iv(None, 10)) == "[None, 9]"
    assert bounds(n.Mod(x, y), x=iv(0, 4), y=iv(0, 10)) == "[0, 4]"
    loaded = {"x": iv(None, None), "u": iv(None, None, uint8)}
    assert shown(bounds_of_expr(n.Mod(x, n.Cast(int32, u)), loaded)) == "[0, 254]"
    assert shown(bounds_of_expr(n.Max(n.Mod(x, n.Cast(int32, u)), c(0)), loaded)) == "[0, 254]"
    assert bounds(n.Mod(f, n.Cast(float32, u)), f=iv(None, None, float32)) == "[None, None]"


def test_bitwise_and_with_a_nonnegative_operand() -> None:
    """x & m with m >= 0 lies in [0, m]: the sign bit is clear and no bit is added."""
    assert bounds(n.And(x, c(12)), x=iv(None, None)) == "[0, 12]"
    assert bounds(n.And(x, y), x=iv(None, None), y=iv(0, 10)) == "[0, 10]"
    assert bounds(n.And(x, y), x=iv(3, 7), y=iv(0, 10)) == "[0, 7]"
    assert bounds(n.And(x, y), x=iv(None, None), y=iv(-1, 10)) == "[None, None]"


def test_min_max_select() -> None:
    """Min/Max combine endpoints (an unbounded side doesn't constrain the other); Select
    on a condition of variables in scope is the union of its branches."""
    assert bounds(n.Min(x, c(10)), x=iv(0, None)) == "[0, 10]"
    assert bounds(n.Max(x, c(0))) == "[max(x, 0), max(x, 0)]"
    assert bounds(n.Max(x, c(0)), x=iv(None, 5)) == "[0, 5]"
    assert bounds(n.Min(n.Max(x, c(0)), c(99)), x=iv(None, None)) == "[0, 99]"
    assert bounds(n.Select(n.LT(x, y), x, n.Add(y, c(1))), x=iv(0, 4), y=iv(2, 9)) \
        == "[0, 10]"


def test_select_on_a_condition_outside_the_scope_selects_the_bounds() -> None:
    """A condition with no variable in scope (a specialization's) is one branch for the
    whole scope: the bounds are those of the branch it picks."""
    assert bounds(n.Select(n.EQ(y, c(12)), n.Add(x, c(11)), n.Add(x, y)), x=iv(0, 4)) \
        == "[select(y == 12, 11, y), select(y == 12, 15, y + 4)]"
    assert bounds(n.Select(n.EQ(y, c(12)), x, c(0)), x=iv(None, 4)) \
        == "[None, select(y == 12, 4, 0)]"


def test_boolean_expressions() -> None:
    """Comparisons and logical ops are [false, true] unless they fold."""
    assert bounds(n.LT(x, y), x=iv(0, 9)) == "[False, True]"
    assert bounds(n.LT(x, c(10)), x=iv(0, 9)) == "[False, True]"
    assert bounds(n.LT(c(1), c(2))) == "[True, True]"
    assert bounds(n.And(n.LT(x, y), n.EQ(x, x))).startswith("[False")


def test_casts() -> None:
    """Casts keep the interval when exact or monotonic, and give the target type's range
    otherwise if it has 16 bits or fewer (wider ones are unbounded: a 32-bit range bounds
    no index usefully). A float to int32 cast of symbolic bounds casts them (issue 12)."""
    assert bounds(n.Cast(int32, u)) == "[int32(u), int32(u)]"
    assert bounds(n.Cast(int32, n.Add(u, c(1, uint8))), u=iv(0, 255, uint8)) == "[0, 255]"
    assert bounds(n.Cast(int32, u), u=iv(3, 7, uint8)) == "[3, 7]"
    assert bounds(n.Cast(uint8, x), x=iv(0, 100)) == "[uint8(0), uint8(100)]"
    assert bounds(n.Cast(uint8, x), x=iv(0, 300)) == "[uint8(0), uint8(255)]"
    assert bounds(n.Cast(int16, x), x=iv(None, None)) == "[int16(-32768), int16(32767)]"
    assert bounds(n.Cast(float32, x), x=iv(0, 10)) == "[0.0, 10.0]"
    assert bounds(n.Cast(int32, f), f=iv(None, None, float32)) == "[None, None]"
    assert bounds(n.Cast(int32, f), f=iv(0.5, 9.5, float32)) == "[0, 9]"
    assert bounds(n.Cast(int32, f), f=iv(0.0, 2147483648.0, float32)) == "[0, None]"
    a, b = n.Var("a", float32), n.Var("b", float32)
    # a float may be NaN, which casts to 0
    assert bounds(n.Cast(int32, f), f=Interval(a, b)) == "[int32(min(a, 0.0)), int32(max(b, 0.0))]"
    assert bounds(n.Cast(int32, n.Cast(float32, x))) == "[int32(float32(x)), int32(float32(x))]"
    w = n.Var("w", uint32)
    assert bounds(n.Cast(int32, w), w=iv(0, 100, uint32)) == "[0, 100]"
    assert bounds(n.Cast(int32, w), w=iv(0, 2**32 - 1, uint32)) == "[None, None]"


def test_wrapping_types_fall_back_to_the_type_range() -> None:
    """For types that wrap, a bound that could have wrapped becomes the type's range."""
    assert bounds(n.Add(u, c(1, uint8)), u=iv(0, 10, uint8)) == "[uint8(1), uint8(11)]"
    assert bounds(n.Add(u, c(1, uint8)), u=iv(0, 255, uint8)) == "[uint8(0), uint8(255)]"
    assert bounds(n.Sub(u, c(1, uint8)), u=Interval(n.Var("a", uint8), n.Var("b", uint8))) \
        == "[uint8(0), uint8(255)]"
    assert bounds(n.Add(u, c(1, uint8))) == "[u + uint8(1), u + uint8(1)]"


def test_calls_and_loads() -> None:
    """Func, input and Load values are bounded by their type when it has 16 bits or fewer;
    math calls are bounded by what the function is known to do."""
    assert bounds(call("inp", uint8, x)) == "[uint8(0), uint8(255)]"
    assert bounds(call("g", int32, x)) == "[None, None]"
    assert bounds(call("mask", bool_, x)) == "[False, True]"
    assert bounds(n.Load(int16, "buf", x)) == "[int16(-32768), int16(32767)]"
    assert bounds(n.Cast(int32, call("inp", uint8, x))) == "[0, 255]"
    math_call = n.CallKind.MATH
    assert bounds(call("floor", float32, f, kind=math_call), f=iv(0.5, 2.5, float32)) \
        == "[0.0, 2.0]"
    assert bounds(call("sqrt", float32, f, kind=math_call), f=iv(None, 4.0, float32)) \
        == "[0.0, 2.0]"
    assert bounds(call("sin", float32, f, kind=math_call), f=iv(0.0, None, float32)) \
        == "[-1.0, 1.0]"
    assert bounds(call("exp", float32, f, kind=math_call), f=iv(None, 0.0, float32)) \
        == "[0.0, 1.0]"
    assert bounds(call("abs", int32, x, kind=math_call), x=iv(-3, 5)) == "[0, 5]"
    assert bounds(call("abs", int32, x, kind=math_call), x=iv(-7, -2)) == "[2, 7]"
    assert bounds(call("pow", float32, f, f, kind=math_call), f=iv(0.0, 1.0, float32)) \
        == "[None, None]"
    tanh = bounds_of_expr(call("tanh", float32, f, kind=math_call),
                          {"f": iv(0.0, None, float32)})
    assert tanh.min.value == 0.0 and tanh.max.value == 1.0


def test_let_binds_the_value_interval() -> None:
    """A Let's name takes the interval of its value inside the body."""
    t = n.Var("t")
    assert bounds(n.Let("t", n.Add(x, c(1)), n.Mul(t, c(2))), x=iv(0, 10)) == "[2, 22]"


def test_results_have_the_expression_type() -> None:
    """Integer bounds are expressions of the bounded expression's type."""
    s = n.Var("s", int16)
    result = bounds_of_expr(n.Mod(n.Add(s, c(2, int16)), c(5, int16)), {})
    assert result.min.type == int16 and result.max.type == int16
    result = bounds_of_expr(n.Div(s, c(3, int16)), {"s": iv(-9, 9, int16)})
    assert shown(result) == "[int16(-3), int16(3)]"


def test_loop_relaxation_example() -> None:
    """Relaxing x over [m, m + e - 1] bounds x - 1 and x + 1 like bounds inference needs."""
    scope = {"x": Interval(m, n.Sub(n.Add(m, e), c(1)))}
    assert shown(bounds_of_expr(n.Sub(x, c(1)), scope)) == "[m - 1, e + m - 2]"
    assert shown(bounds_of_expr(n.Add(x, c(1)), scope)) == "[m + 1, e + m]"


def test_division_by_a_divisor_of_unknown_value() -> None:
    """An integer divided by a value >= 0 (an array's extent) keeps its sign and shrinks
    (x // 0 == 0); by any value, it stays within [-|a|, |a|] (issue 12)."""
    assert bounds(n.Div(x, y), x=iv(0, 9), y=iv(0, None)) == "[0, 9]"
    assert bounds(n.Div(x, y), x=iv(-4, 9), y=iv(0, 5)) == "[-4, 9]"
    assert bounds(n.Div(x, y), x=iv(-4, 9), y=iv(-2, 3)) == "[-9, 9]"
    assert bounds(n.Div(x, y), x=iv(None, 9)) == "[None, None]"


def test_division_by_one_divisor_of_unknown_value_but_known_sign() -> None:
    """One divisor (not a range of them) of known sign keeps a // b monotonic in a, so
    each end divides: a fused loop's `gc // C` over [0, G * C - 1] stays below G (the
    whole-tile test of a split-K convolution's groups failed on G * C - 1)."""
    extent = n.Var("inp.extent.0")
    assert bounds(n.Div(x, extent), x=iv(0, 9)) == "[0, 9 // inp.extent.0]"
    assert bounds(n.Div(x, n.Add(extent, c(2))), x=iv(-4, 9)) == \
        "[-4 // (inp.extent.0 + 2), 9 // (inp.extent.0 + 2)]"
    negative = n.Sub(c(0), extent)
    assert bounds(n.Div(x, negative), x=iv(-4, 9)) == \
        "[9 // (0 - inp.extent.0), -4 // (0 - inp.extent.0)]"
    groups, blocks = n.Max(y, c(0)), n.Max(m, c(0))
    fused = n.Sub(n.Mul(groups, blocks), c(1))
    top = bounds_of_expr(n.Div(x, blocks), {"x": Interval(c(0), fused)}).max
    for g_count, b_count in [(4, 2), (1, 1), (3, 7), (5, 0)]:
        assert simplify(substitute(top, {"y": c(g_count), "m": c(b_count)})).value == \
            (g_count - 1 if b_count else 0)
    # y of either sign: the one divisor still gives the ends
    assert bounds(n.Div(x, y), x=iv(-4, 9)) == "[min(-4 // y, 9 // y), max(-4 // y, 9 // y)]"
