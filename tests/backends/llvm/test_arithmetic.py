"""Operators compiled by the LLVM backend against an independent computation of the
semantics documented in halo/ir/nodes.py: Python integers for integer types, NumPy in the
operands' dtype for floats."""
from __future__ import annotations

import operator

import numpy as np
import pytest

from halo.ir.nodes import (
    EQ,
    LE,
    LT,
    NE,
    Add,
    And,
    Div,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    Select,
    Sub,
    Xor,
    const,
)
from halo.ir.types import (
    Type,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint32,
)

INTEGER_TYPES = [int8, uint8, int16, int32, uint32, int64]
FLOAT_TYPES = [float16, float32, float64]

# The documented meaning of each integer operator, on Python's unbounded integers; the
# result is then wrapped to the operand type.
INTEGER_SEMANTICS = {
    Add: operator.add,
    Sub: operator.sub,
    Mul: operator.mul,
    Div: lambda a, b: 0 if b == 0 else a // b,  # Python's // is floor division
    Mod: lambda a, b: 0 if b == 0 else a % b,  # Python's % has the sign of the divisor
    Min: min,
    Max: max,
    And: operator.and_,
    Or: operator.or_,
    Xor: operator.xor,
}
COMPARISONS = {EQ: operator.eq, NE: operator.ne, LT: operator.lt, LE: operator.le}


def wrap(value: int, t: Type) -> int:
    """`value` reduced to the range of integer type `t`, two's complement."""
    value &= (1 << t.bits) - 1
    if t.is_int and value >= 1 << (t.bits - 1):
        value -= 1 << t.bits
    return value


def integer_operands(t: Type) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of values at the edges of `t` (0, ±1, ±7, min, max, ...) plus random pairs."""
    low, high = t.min_value(), t.max_value()
    edges = sorted({v for v in (0, 1, 2, 3, 7, -1, -2, -3, -7, low, low + 1, high - 1, high)
                    if low <= v <= high})
    random = np.random.default_rng(0).integers(low, high, size=(2, 200), endpoint=True)
    a = [x for x in edges for _ in edges] + random[0].tolist()
    b = [y for _ in edges for y in edges] + random[1].tolist()
    return np.array(a, dtype=t.numpy), np.array(b, dtype=t.numpy)


@pytest.mark.parametrize("t", INTEGER_TYPES, ids=str)
@pytest.mark.parametrize("op", list(INTEGER_SEMANTICS), ids=lambda op: op.__name__)
def test_integer_operator(elementwise, op, t):
    """Each integer operator wraps, floors and treats a zero divisor as documented."""
    a, b = integer_operands(t)
    semantics = INTEGER_SEMANTICS[op]
    expected = [wrap(semantics(int(x), int(y)), t) for x, y in zip(a, b, strict=True)]
    np.testing.assert_array_equal(elementwise(op, a, b), np.array(expected, dtype=t.numpy))


@pytest.mark.parametrize("t", INTEGER_TYPES, ids=str)
@pytest.mark.parametrize("op", list(COMPARISONS), ids=lambda op: op.__name__)
def test_integer_comparison(elementwise, op, t):
    """Integer comparisons respect signedness (uint32 max is greater than 0)."""
    a, b = integer_operands(t)
    expected = [COMPARISONS[op](int(x), int(y)) for x, y in zip(a, b, strict=True)]
    np.testing.assert_array_equal(elementwise(op, a, b), np.array(expected))


@pytest.mark.parametrize("t", INTEGER_TYPES, ids=str)
def test_integer_not_is_bitwise(elementwise, t):
    """Not on integers flips every bit."""
    a, _ = integer_operands(t)
    expected = [wrap(~int(x), t) for x in a]
    np.testing.assert_array_equal(elementwise(Not, a), np.array(expected, dtype=t.numpy))


def test_floor_division_and_modulo_examples(elementwise):
    """Negative operands round down, x // 0 == x % 0 == 0, and MIN // -1 wraps to MIN."""
    a = np.array([7, -7, 7, -7, 6, 5, -2**31, -2**31, 3], dtype=np.int32)
    b = np.array([2, 2, -2, -2, -3, 0, -1, 0, 1], dtype=np.int32)
    np.testing.assert_array_equal(elementwise(Div, a, b), [3, -4, -4, 3, -2, 0, -2**31, 0, 3])
    np.testing.assert_array_equal(elementwise(Mod, a, b), [1, 1, -1, -1, 0, 0, 0, 0, 0])


@pytest.mark.parametrize("divisor", [1, 3, 8, 100])
@pytest.mark.parametrize("t", INTEGER_TYPES, ids=str)
def test_floor_division_and_modulo_by_a_positive_constant(elementwise, t, divisor):
    """A positive constant divisor (index arithmetic's) takes a shorter path; it still
    rounds negative operands down, as NumPy's // and % do, on every type's edge values."""
    a, _ = integer_operands(t)
    d = const(divisor, t)
    np.testing.assert_array_equal(elementwise(lambda x: Div(x, d), a), a // a.dtype.type(divisor))
    np.testing.assert_array_equal(elementwise(lambda x: Mod(x, d), a), a % a.dtype.type(divisor))


def test_division_by_a_zero_constant(elementwise):
    """Dividing by a constant 0 gives 0 even when LLVM folds the divisor in."""
    a = np.array([-5, 0, 9], dtype=np.int16)
    np.testing.assert_array_equal(elementwise(lambda x: Div(x, const(0, int16)), a), [0, 0, 0])
    np.testing.assert_array_equal(elementwise(lambda x: Mod(x, const(0, int16)), a), [0, 0, 0])


@pytest.mark.parametrize("op", [And, Or, Xor, EQ, NE, LT, LE, Min, Max],
                         ids=lambda op: op.__name__)
def test_bool_operator(elementwise, op):
    """On bool, And/Or/Xor are logical and ordering treats False < True."""
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    semantics = {**INTEGER_SEMANTICS, **COMPARISONS}[op]
    expected = [bool(semantics(bool(x), bool(y))) for x, y in zip(a, b, strict=True)]
    np.testing.assert_array_equal(elementwise(op, a, b), expected)


def test_bool_not(elementwise):
    """Not on bool is logical negation."""
    np.testing.assert_array_equal(elementwise(Not, np.array([False, True])), [True, False])


def float_operands(t: Type, *, with_nan: bool) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of signed values, zeros and infinities (and NaN if asked) plus random pairs."""
    edges = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.1, 3.0, -7.0, 1e3, np.inf, -np.inf]
    if with_nan:
        edges.append(np.nan)
    random = np.random.default_rng(1).uniform(-100, 100, size=(2, 200))
    a = [x for x in edges for _ in edges] + random[0].tolist()
    b = [y for _ in edges for y in edges] + random[1].tolist()
    return np.array(a, dtype=t.numpy), np.array(b, dtype=t.numpy)


FLOAT_SEMANTICS = {
    Add: operator.add,
    Sub: operator.sub,
    Mul: operator.mul,
    Div: operator.truediv,
    Mod: lambda a, b: a - b * np.floor(a / b),  # each step rounded to the dtype
    Min: np.minimum,
    Max: np.maximum,
}


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("op", list(FLOAT_SEMANTICS), ids=lambda op: op.__name__)
def test_float_operator(elementwise, op, t):
    """Float operators are bit-exact IEEE operations in the operand type, as in NumPy."""
    a, b = float_operands(t, with_nan=False)
    with np.errstate(all="ignore"):
        expected = FLOAT_SEMANTICS[op](a, b)
    np.testing.assert_array_equal(elementwise(op, a, b), expected)


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("op", list(COMPARISONS), ids=lambda op: op.__name__)
def test_float_comparison(elementwise, op, t):
    """Float comparisons follow NumPy, NaN included (NaN != NaN is True)."""
    a, b = float_operands(t, with_nan=True)
    np.testing.assert_array_equal(elementwise(op, a, b), COMPARISONS[op](a, b))


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("op", [Min, Max], ids=lambda op: op.__name__)
def test_float_min_max_propagate_nan(elementwise, op, t):
    """Min and Max are NumPy's np.minimum/np.maximum: NaN if either operand is NaN, in
    either position, also against a constant (which takes a cheaper path)."""
    a, b = float_operands(t, with_nan=True)
    expected = FLOAT_SEMANTICS[op](a, b)
    np.testing.assert_array_equal(elementwise(op, a, b), expected)
    for c in (0.5, -np.inf, np.nan):
        constant = const(float(c), t)
        want = FLOAT_SEMANTICS[op](a, t.numpy.type(c))
        np.testing.assert_array_equal(elementwise(lambda x, k=constant: op(x, k), a), want)
        np.testing.assert_array_equal(elementwise(lambda x, k=constant: op(k, x), a), want)


@pytest.mark.parametrize("t", [int16, uint8, float32], ids=str)
def test_select(elementwise, t):
    """Select picks its true value where the condition holds, its false value elsewhere."""
    a = np.array([1, 5, 3, 9, 0], dtype=t.numpy)
    b = np.array([4, 2, 3, 1, 7], dtype=t.numpy)
    out = elementwise(lambda x, y: Select(LT(x, y), Mul(x, const(2, t)), y), a, b)
    np.testing.assert_array_equal(out, np.where(a < b, a * 2, b))


def test_select_evaluates_a_division_by_zero_safely(elementwise):
    """Select(b != 0, a // b, -1) is safe because both sides are always evaluated and
    integer division by zero is defined."""
    a = np.array([9, 8, -7], dtype=np.int64)
    b = np.array([2, 0, 2], dtype=np.int64)
    out = elementwise(lambda x, y: Select(NE(y, const(0, int64)), Div(x, y), const(-1, int64)),
                      a, b)
    np.testing.assert_array_equal(out, [4, -1, -4])


def test_bool_select_and_comparison_chain(elementwise):
    """A bool Select over float comparisons gives NumPy's answer."""
    a = np.array([1.0, -2.0, 3.0], dtype=np.float64)
    b = np.array([0.0, -1.0, 4.0], dtype=np.float64)
    out = elementwise(lambda x, y: Select(LE(x, y), EQ(x, x), NE(x, x)), a, b)
    np.testing.assert_array_equal(out, a <= b)
    assert out.dtype == bool_.numpy
