"""Statements compiled by the LLVM backend: loops, allocations, branches, lets, bool and
float16 memory, scalar parameters, and the InternalErrors that catch unlowered input."""
from __future__ import annotations

import re

import numpy as np
import pytest

from halo.backends.arguments import Argument
from halo.backends.llvm import compile_function
from halo.errors import InternalError
from halo.ir.nodes import (
    EQ,
    LT,
    Add,
    Allocate,
    And,
    Block,
    Call,
    CallKind,
    Cast,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    Let,
    LetStmt,
    Load,
    Mod,
    Mul,
    Not,
    Provide,
    Select,
    Store,
    Sub,
    Var,
    const,
)
from halo.ir.types import (
    ALL_TYPES,
    Type,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int32,
    int64,
    uint32,
)

i, x, y = Var("i"), Var("x"), Var("y")
n = Var("n")


def serial(name: str, extent, body, minimum=const(0), kind=ForKind.SERIAL) -> For:
    return For(name, minimum, extent, kind, body)


def buffer(name: str, t: Type) -> Argument:
    return Argument(name, "buffer", t)


def scalar(name: str, t: Type) -> Argument:
    return Argument(name, "scalar", t)


def test_scale_and_offset_loop():
    """out[i] = in[i] * 2 + 1 over float32 matches NumPy bit for bit."""
    value = Add(Mul(Load(float32, "inp", i), const(2, float32)), const(1, float32))
    f = compile_function("scale", serial("i", n, Store("out", i, value)),
                         [buffer("inp", float32), buffer("out", float32), scalar("n", int32)])
    inp = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    out = np.zeros_like(inp)
    f(inp, out, len(out))
    np.testing.assert_array_equal(out, inp * 2 + 1)


@pytest.mark.parametrize("kind", list(ForKind), ids=lambda k: k.value)
def test_loop_runs_min_to_min_plus_extent(kind):
    """A loop of any kind visits min, ..., min + extent - 1 and nothing else."""
    body = Store("out", i, Mul(i, i))
    f = compile_function("span", serial("i", const(4), body, minimum=const(3), kind=kind),
                         [buffer("out", int32)])
    out = np.full(10, -1, dtype=np.int32)
    f(out)
    np.testing.assert_array_equal(out, [-1, -1, -1, 9, 16, 25, 36, -1, -1, -1])


@pytest.mark.parametrize("extent", [0, -5])
def test_loop_with_extent_not_positive_runs_nothing(extent):
    """A loop whose extent is <= 0 runs no iteration."""
    f = compile_function("empty", serial("i", n, Store("out", i, const(1))),
                         [buffer("out", int32), scalar("n", int32)])
    out = np.zeros(4, dtype=np.int32)
    f(out, extent)
    np.testing.assert_array_equal(out, 0)


def test_loop_bounds_are_evaluated_once():
    """Changing what the extent reads from inside the loop doesn't change the trip count."""
    limit = Load(int32, "limit", const(0))
    body = Block((Store("count", const(0), Add(Load(int32, "count", const(0)), const(1))),
                  Store("limit", const(0), const(0))))
    f = compile_function("once", serial("i", limit, body),
                         [buffer("limit", int32), buffer("count", int32)])
    limit_array, count = np.array([7], dtype=np.int32), np.zeros(1, dtype=np.int32)
    f(limit_array, count)
    assert count[0] == 7


def test_unsigned_loop_and_index():
    """A loop over uint32 bounds indexes memory with zero-extended uint32 values."""
    u = Var("u", uint32)
    body = Store("out", u, Cast(int32, u))
    f = compile_function("unsigned", For("u", const(0, uint32), Var("m", uint32),
                                         ForKind.SERIAL, body),
                         [buffer("out", int32), scalar("m", uint32)])
    out = np.zeros(5, dtype=np.int32)
    f(out, 5)
    np.testing.assert_array_equal(out, np.arange(5))


def test_nested_loops_with_heap_and_stack_allocations():
    """A heap buffer of symbolic size and a constant stack row, both reused across
    iterations, give the NumPy result."""
    height, width = Var("h"), 8
    tmp_index = Add(Mul(y, const(width)), x)
    # tmp[y, x] = inp[y, x] * 3 on the heap, then per row: row[x] = tmp[y, x] + 1 on the
    # stack, out[y, x] = row[x] + row[width - 1 - x]
    produce = serial("y", height, serial("x", const(width),
                                         Store("tmp", tmp_index,
                                               Mul(Load(float32, "inp", tmp_index),
                                                   const(3, float32)))))
    row = Block((
        serial("x", const(width), Store("row", x, Add(Load(float32, "tmp", tmp_index),
                                                      const(1, float32)))),
        serial("x", const(width), Store("out", tmp_index,
                                        Add(Load(float32, "row", x),
                                            Load(float32, "row", Sub(const(width - 1), x))))),
    ))
    consume = serial("y", height, Allocate("row", float32, const(width), row, scope="stack"))
    body = Allocate("tmp", float32, Mul(height, const(width)), Block((produce, consume)),
                    scope="heap")
    f = compile_function("nested", body, [buffer("inp", float32), buffer("out", float32),
                                          scalar("h", int32)])
    inp = np.random.default_rng(1).standard_normal((5, width)).astype(np.float32)
    out = np.zeros_like(inp)
    f(inp, out, 5)
    row_values = inp * np.float32(3) + np.float32(1)
    np.testing.assert_array_equal(out, row_values + row_values[:, ::-1])
    # The heap buffer starts on a cache line, so no vector access of it spans two.
    assert re.search(r"@aligned_alloc\(i64 (noundef )?64, ", f.source())


def test_if_then_else():
    """IfThenElse runs its then-case where the condition holds and its else-case elsewhere;
    without an else-case it does nothing there."""
    even = EQ(Mod(i, const(2)), const(0))
    first = IfThenElse(even, Store("a", i, Load(int32, "inp", i)),
                       Store("a", i, Sub(const(0), Load(int32, "inp", i))))
    second = IfThenElse(LT(i, const(2)), Store("b", i, const(1)))
    f = compile_function("branches", serial("i", n, Block((first, second))),
                         [buffer("inp", int32), buffer("a", int32), buffer("b", int32),
                          scalar("n", int32)])
    inp = np.arange(1, 7, dtype=np.int32)
    a, b = np.zeros(6, dtype=np.int32), np.zeros(6, dtype=np.int32)
    f(inp, a, b, 6)
    np.testing.assert_array_equal(a, [1, -2, 3, -4, 5, -6])
    np.testing.assert_array_equal(b, [1, 1, 0, 0, 0, 0])


def test_let_and_let_stmt_shadowing():
    """An inner LetStmt or Let shadows an outer binding of the same name only in its body."""
    t = Var("t", float64)
    inner = LetStmt("t", Add(t, const(1, float64)), Store("a", i, t))
    after = Store("b", i, Let("t", Mul(t, t), Add(t, const(0.5, float64))))
    body = LetStmt("t", Mul(Load(float64, "inp", i), const(2, float64)),
                   Block((inner, after, Store("c", i, t))))
    f = compile_function("lets", serial("i", n, body),
                         [buffer("inp", float64), buffer("a", float64), buffer("b", float64),
                          buffer("c", float64), scalar("n", int32)])
    inp = np.array([1.0, -2.0, 0.25])
    a, b, c = np.zeros(3), np.zeros(3), np.zeros(3)
    f(inp, a, b, c, 3)
    np.testing.assert_array_equal(a, inp * 2 + 1)
    np.testing.assert_array_equal(b, (inp * 2) ** 2 + 0.5)
    np.testing.assert_array_equal(c, inp * 2)


def test_evaluate_statement_compiles():
    """Evaluate of a side-effect-free expression compiles and does nothing visible."""
    sqrt = Call(float32, "sqrt", (Load(float32, "inp", i),), CallKind.MATH)
    f = compile_function("evaluate", serial("i", n, Evaluate(sqrt)),
                         [buffer("inp", float32), scalar("n", int32)])
    inp = np.ones(3, dtype=np.float32)
    f(inp, 3)
    np.testing.assert_array_equal(inp, 1)


def test_bool_buffers_hold_one_byte_per_element():
    """bool buffers are read and written as NumPy bools: one byte, 0 or 1."""
    a, b = Load(bool_, "a", i), Load(bool_, "b", i)
    body = Block((Store("out", i, And(Not(a), b)), Store("count", i, Cast(int32, a))))
    f = compile_function("bools", serial("i", n, body),
                         [buffer("a", bool_), buffer("b", bool_), buffer("out", bool_),
                          buffer("count", int32), scalar("n", int32)])
    a_values = np.array([False, False, True, True])
    b_values = np.array([False, True, False, True])
    out, count = np.ones(4, dtype=bool), np.zeros(4, dtype=np.int32)
    f(a_values, b_values, out, count, 4)
    np.testing.assert_array_equal(out, ~a_values & b_values)
    np.testing.assert_array_equal(out.view(np.uint8), [0, 1, 0, 0])
    np.testing.assert_array_equal(count, [0, 0, 1, 1])


@pytest.mark.parametrize("strict_float", [True, False])
def test_float16_buffers(strict_float):
    """float16 loads, arithmetic and stores round like NumPy's float16 with strict_float;
    without it, a host with native float16 FMA (AVX512-FP16) may fuse the multiply-add,
    which rounds once instead of twice: then the result is within one float16 ulp."""
    value = Add(Mul(Load(float16, "inp", i), const(3, float16)), const(0.1, float16))
    f = compile_function("halves", serial("i", n, Store("out", i, value)),
                         [buffer("inp", float16), buffer("out", float16), scalar("n", int32)],
                         strict_float=strict_float)
    inp = np.random.default_rng(2).uniform(-100, 100, 500).astype(np.float16)
    out = np.zeros_like(inp)
    f(inp, out, len(inp))
    expected = inp * np.float16(3) + np.float16(0.1)
    if strict_float:
        np.testing.assert_array_equal(out, expected)
    else:
        np.testing.assert_array_less(np.abs(out - expected), np.spacing(np.abs(expected)) * 1.01)


SCALAR_VALUES = {
    "bool": [True, False], "int8": [-128, 127], "int16": [-32768, 1234],
    "int32": [-2**31, 2**31 - 1], "int64": [-2**63, 2**63 - 1], "uint8": [255, 0],
    "uint16": [65535, 7], "uint32": [2**32 - 1, 5], "uint64": [2**64 - 1, 2**63],
    "float16": [0.1, -65504.0], "float32": [0.1, -3.4e38], "float64": [0.1, -1e300],
}


@pytest.mark.parametrize("t", ALL_TYPES, ids=str)
def test_scalar_parameter_round_trips(t):
    """A scalar parameter of each type reaches the function with its exact value."""
    f = compile_function("store_scalar", Store("out", const(0), Var("p", t)),
                         [buffer("out", t), scalar("p", t)])
    for value in SCALAR_VALUES[str(t)]:
        out = np.zeros(1, dtype=t.numpy)
        f(out, value)
        assert out[0] == t.numpy.type(value)


@pytest.mark.parametrize("t", ALL_TYPES, ids=str)
def test_constant_round_trips(t):
    """A constant of each type, extremes included, is stored with its exact value."""
    for value in SCALAR_VALUES[str(t)]:
        f = compile_function("store_constant", Store("out", const(0), const(value, t)),
                             [buffer("out", t)])
        out = np.zeros(1, dtype=t.numpy)
        f(out)
        assert out[0] == t.numpy.type(value)


def test_scalar_parameters_of_several_types_together():
    """int8, float64, bool and float16 parameters combine in one expression."""
    k, scale = Var("k", int8), Var("scale", float64)
    flag, offset = Var("flag", bool_), Var("offset", float16)
    value = Add(Mul(Cast(float64, Add(Load(int8, "inp", i), k)), scale),
                Select(flag, Cast(float64, offset), const(0, float64)))
    f = compile_function("mixed", serial("i", n, Store("out", i, value)),
                         [buffer("inp", int8), scalar("k", int8), scalar("scale", float64),
                          scalar("flag", bool_), scalar("offset", float16),
                          buffer("out", float64), scalar("n", int32)])
    inp = np.array([1, -2, 120], dtype=np.int8)
    out = np.zeros(3)
    f(inp, np.int8(10), 0.5, True, np.float16(2.5), out, 3)
    np.testing.assert_array_equal(out, (inp + np.int8(10)).astype(np.float64) * 0.5 + 2.5)


def test_free_variable_raises_internal_error_naming_it():
    """A free Var that is not an argument is a lowering bug reported by name."""
    body = serial("i", Var("width"), Store("out", i, const(0)))
    with pytest.raises(InternalError, match="'width'"):
        compile_function("free", body, [buffer("out", int32)])


@pytest.mark.parametrize(("body", "message"), [
    (Store("out", const(0), Load(int32, "missing", const(0))), "buffer 'missing'"),
    (Provide("out", const(0), (const(0),)), "Provide"),
    (Allocate("tmp", int32, const(-1), Store("tmp", const(0), const(1)), scope="stack"),
     "must be a non-negative integer"),
    (Store("out", const(0), Cast(int32, Var("n", int64))), "used as int64"),
    (Store("out", const(0), Add(const(1), const(1, int64))), "different types"),
    (Store("out", const(0), Cast(int32, Call(float32, "sinh", (const(1.0, float32),),
                                             CallKind.MATH))), "unknown math function"),
    (Store("out", const(0), Call(int32, "f", (const(0),), CallKind.FUNC)), "survived lowering"),
    (Store("out", const(0), Load(float32, "out", const(0))), "float32"),
], ids=["unknown buffer", "unlowered", "stack size", "var type", "operand types",
        "math name", "func call", "load type"])
def test_malformed_input_raises_internal_error(body, message):
    """Input that lowering should never produce raises InternalError with the reason."""
    with pytest.raises(InternalError, match=message):
        compile_function("bad", body, [buffer("out", int32), scalar("n", int32)])
