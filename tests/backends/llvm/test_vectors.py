"""Vector code from the LLVM backend: vector types, ramps, broadcasts, every operator, casts,
selects and math calls on vectors, dense, masked, gathered and scattered memory accesses,
checked against NumPy and against the backend's own scalar code, on hand-built IR and on
IR from the vectorize_loops pass."""
from __future__ import annotations

import ctypes
import mmap
import re
from collections.abc import Callable

import numpy as np
import pytest

import halo
from halo.backends.arguments import Argument
from halo.backends.llvm import CompiledFunction, compile_function
from halo.errors import InternalError
from halo.ir.nodes import (
    EQ,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    Call,
    CallKind,
    Cast,
    Div,
    Expr,
    For,
    ForKind,
    Let,
    LetStmt,
    Load,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    Ramp,
    Select,
    Stmt,
    Store,
    Sub,
    Var,
    Xor,
    block,
    const,
)
from halo.ir.types import (
    Type,
    as_type,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
)

LANES = 8
v = Var("v")  # the loop over vectors
DENSE = Ramp(Mul(v, const(LANES)), const(1), LANES)  # lanes v*8, ..., v*8 + 7


def vector_of(t: Type, lanes: int = LANES) -> Type:
    return t.with_lanes(lanes)


def buffer(name: str, t: Type) -> Argument:
    return Argument(name, "buffer", t)


def scalar(name: str, t: Type) -> Argument:
    return Argument(name, "scalar", t)


def over_vectors(body: Stmt, count: Expr = Var("count")) -> Stmt:
    """for v in range(count): body"""
    return For("v", const(0), count, ForKind.SERIAL, body)


def run_vectorized(build: Callable[..., Expr], *inputs: np.ndarray,
                   lanes: int = LANES) -> np.ndarray:
    """`out[ramp(v * lanes, 1, lanes)] = build(in0[ramp], in1[ramp], ...)` for every vector
    of the inputs, whose common length is a multiple of `lanes`; returns `out`."""
    index = Ramp(Mul(v, const(lanes)), const(1), lanes)
    loads = [Load(vector_of(as_type(a.dtype), lanes), f"in{k}", index)
             for k, a in enumerate(inputs)]
    value = build(*loads)
    element = value.type.element_of()
    args = [buffer(f"in{k}", as_type(a.dtype)) for k, a in enumerate(inputs)]
    args += [buffer("out", element), scalar("count", int32)]
    out = np.zeros(len(inputs[0]), element.numpy)
    # strict_float: each lane must round exactly as NumPy does
    compile_function("vectorized", over_vectors(Store("out", index, value)), args,
                     strict_float=True)(
        *inputs, out, len(out) // lanes)
    return out


def padded(values: np.ndarray, lanes: int = LANES) -> np.ndarray:
    """`values` repeated cyclically up to the next multiple of `lanes`."""
    return np.resize(values, -(-len(values) // lanes) * lanes)


def integer_operands(t: Type) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values of `t` (0, ±1, ±7, min, max, ...) plus random pairs."""
    low, high = t.min_value(), t.max_value()
    edges = sorted({e for e in (0, 1, 2, 3, 7, -1, -2, -3, -7, low, low + 1, high - 1, high)
                    if low <= e <= high})
    random = np.random.default_rng(0).integers(low, high, size=(2, 200), endpoint=True)
    a = [x for x in edges for _ in edges] + random[0].tolist()
    b = [y for _ in edges for y in edges] + random[1].tolist()
    return padded(np.array(a, dtype=t.numpy)), padded(np.array(b, dtype=t.numpy))


def float_operands(t: Type) -> tuple[np.ndarray, np.ndarray]:
    """Signed values of mixed magnitude, exact zeros and equal pairs included."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal(400) * 10.0 ** rng.integers(-3, 4, 400)
    b = rng.standard_normal(400) * 10.0 ** rng.integers(-3, 4, 400)
    a[:8], b[:8] = [0.0, -0.0, 1.5, -2.5, 3.0, 7.0, -7.0, 2.0], [1.0, 2.0, 1.5, 0.5, -3.0,
                                                                 2.0, 2.0, -0.0]
    b[8:16] = a[8:16]
    return a.astype(t.numpy), b.astype(t.numpy)


# ------------------------------------------------------------------------- dense memory


@pytest.mark.parametrize(("t", "build", "reference"), [
    (float32, lambda a: Add(Mul(a, Broadcast(const(3.0, float32), LANES)),
                            Broadcast(const(0.5, float32), LANES)),
     lambda a: a * np.float32(3) + np.float32(0.5)),
    (float64, lambda a: Sub(Mul(a, a), Broadcast(const(1.0, float64), LANES)),
     lambda a: a * a - 1.0),
    (int32, lambda a: Add(Mul(a, Broadcast(const(7), LANES)), DENSE),
     lambda a: a * np.int32(7) + np.arange(len(a), dtype=np.int32)),
    (uint8, lambda a: Add(a, Broadcast(const(200, uint8), LANES)),
     lambda a: a + np.uint8(200)),
    (int16, lambda a: Mul(a, Broadcast(const(-3, int16), LANES)),
     lambda a: a * np.int16(-3)),
    (bool_, lambda a: Not(a), np.logical_not),
], ids=["float32", "float64", "int32", "uint8", "int16", "bool"])
def test_dense_load_compute_store(t, build, reference):
    """A loop of dense vector loads, arithmetic and dense vector stores matches NumPy."""
    rng = np.random.default_rng(2)
    if t.is_bool:
        data = rng.integers(0, 2, 64).astype(bool)
    elif t.is_float:
        data = rng.standard_normal(64).astype(t.numpy)
    else:
        data = rng.integers(t.min_value(), t.max_value(), 64, endpoint=True).astype(t.numpy)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(run_vectorized(build, data), reference(data))


@pytest.mark.parametrize("lanes", [2, 3, 4, 16, 32])
def test_vectors_of_any_length(lanes):
    """Vectors of 2 to 32 lanes, odd lengths included, load, compute and store."""
    data = np.arange(96, dtype=np.int16)
    out = run_vectorized(lambda a: Mul(a, Broadcast(const(3, int16), lanes)), data,
                         lanes=lanes)
    np.testing.assert_array_equal(out, data * 3)


def test_bool_vectors_are_one_byte_per_element_in_memory():
    """Bool vectors load and store NumPy's one byte per element, as 0 or 1."""
    a = padded(np.array([True, False, True, True, False, False, True, False, True]))
    b = np.roll(a, 3)
    out = run_vectorized(lambda x, y: Or(And(x, Not(y)), Xor(x, y)), a, b)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out.view(np.uint8), ((a & ~b) | (a ^ b)).view(np.uint8))


# ---------------------------------------------------------------------------- operators

INTEGER_TYPES = [int8, uint8, int16, int32, uint32, int64]
FLOAT_TYPES = [float16, float32, float64]
ARITHMETIC = [Add, Sub, Mul, Div, Mod, Min, Max]
BITWISE = [And, Or, Xor]
COMPARISONS = [EQ, NE, LT, LE]


def numpy_operator(op: type, t: Type) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The NumPy function with the semantics nodes.py gives `op` on `t` (for integers
    NumPy's floor division also gives 0 for a zero divisor and wraps MIN // -1)."""
    if op is Div:
        return np.true_divide if t.is_float else np.floor_divide
    if op is Mod and t.is_float:
        return lambda a, b: a - b * np.floor(a / b)  # rounded to t at each step, as nodes.py
    return {Add: np.add, Sub: np.subtract, Mul: np.multiply, Mod: np.remainder,
            Min: np.minimum, Max: np.maximum, And: np.bitwise_and, Or: np.bitwise_or,
            Xor: np.bitwise_xor, EQ: np.equal, NE: np.not_equal, LT: np.less,
            LE: np.less_equal}[op]


def operator_cases():
    for t in INTEGER_TYPES:
        for op in ARITHMETIC + BITWISE + COMPARISONS:
            yield pytest.param(op, t, id=f"{op.__name__}-{t}")
    for t in FLOAT_TYPES:
        for op in ARITHMETIC + COMPARISONS:
            yield pytest.param(op, t, id=f"{op.__name__}-{t}")
    for op in BITWISE + COMPARISONS:
        yield pytest.param(op, bool_, id=f"{op.__name__}-bool")


@pytest.mark.parametrize(("op", "t"), list(operator_cases()))
def test_vector_operator_matches_numpy_and_scalar_code(elementwise, op, t):
    """Each binary operator and comparison on vectors gives NumPy's result, and exactly
    the backend's scalar code's, on edge and random operands (zero divisors included)."""
    if t.is_bool:
        a = padded(np.array([False, False, True, True]))
        b = padded(np.array([False, True, False, True]))
    else:
        a, b = integer_operands(t) if t.is_integer else float_operands(t)
    vector = run_vectorized(op, a, b)
    np.testing.assert_array_equal(vector, elementwise(op, a, b))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(vector, numpy_operator(op, t)(a, b).astype(vector.dtype))


@pytest.mark.parametrize("t", [int8, int32], ids=str)
def test_floor_division_of_negatives_and_by_zero(t):
    """Vector Div and Mod round toward minus infinity, give 0 for a zero divisor, and wrap
    MIN // -1 to MIN."""
    low = int(t.min_value())
    a = padded(np.array([-7, 7, -7, 7, -1, 0, 5, low, low, low, -6, 6], dtype=t.numpy))
    b = padded(np.array([2, -2, -2, 0, 3, 0, 0, -1, 1, 0, 3, -4], dtype=t.numpy))
    quotient, remainder = run_vectorized(Div, a, b), run_vectorized(Mod, a, b)
    np.testing.assert_array_equal(quotient[:12], [-4, -4, 3, 0, -1, 0, 0, low, low, 0, -2, -2])
    np.testing.assert_array_equal(remainder[:12], [1, -1, -1, 0, 2, 0, 0, 0, 0, 0, 0, -2])


@pytest.mark.parametrize("t", [int8, uint8, int32], ids=str)
def test_floor_division_of_vectors_by_a_positive_constant(t):
    """By a constant vector of one positive divisor (index arithmetic's shorter path),
    negative lanes still round down."""
    values = [-9, -8, -7, -1, 0, 1, 7, 8, 9, int(t.min_value()), int(t.max_value())]
    a = padded(np.array(values).astype(t.numpy))  # negatives wrap in uint8
    three = Broadcast(const(3, t), LANES)
    np.testing.assert_array_equal(run_vectorized(lambda x: Div(x, three), a), a // a.dtype.type(3))
    np.testing.assert_array_equal(run_vectorized(lambda x: Mod(x, three), a), a % a.dtype.type(3))


def test_not_on_integer_vectors_is_bitwise():
    """Not on an integer vector complements every bit of every lane."""
    a = np.arange(-8, 8, dtype=np.int32)
    np.testing.assert_array_equal(run_vectorized(Not, a), ~a)


# -------------------------------------------------------------------------------- casts

CASTS = [
    (int8, int32), (uint8, int16), (int16, int64), (uint16, uint32),  # widening
    (int32, int8), (int64, int16), (uint32, uint8),  # narrowing wraps
    (float32, float64), (float16, float32), (float64, float32), (float32, float16),
    (float64, float16),  # float widths
    (int32, float32), (uint8, float32), (int64, float64), (int16, float16),  # int -> float
    (float32, int32), (float64, int64), (float32, uint8), (float16, int16),  # float -> int
    (int32, bool_), (float32, bool_), (uint8, bool_), (bool_, float32), (bool_, int8),
    (bool_, uint32),
]


def cast_inputs(source: Type, target: Type) -> np.ndarray:
    """Values that convert with defined results: integers over their range, floats in the
    range of an integer target, NaN and ±0 for float -> bool."""
    rng = np.random.default_rng(4)
    if source.is_bool:
        return padded(np.array([True, False, False, True, True]))
    if source.is_integer:
        return rng.integers(source.min_value(), source.max_value(), 64,
                            endpoint=True).astype(source.numpy)
    if target.is_integer:
        low, high = max(target.min_value(), -1000), min(target.max_value(), 1000)
        return rng.uniform(low, high, 64).astype(source.numpy)
    values = rng.standard_normal(64) * 1000
    values[:4] = [np.nan, 0.0, -0.0, 1e-30]
    return values.astype(source.numpy)


@pytest.mark.parametrize(("source", "target"), CASTS, ids=lambda t: str(t))
def test_vector_cast_matches_numpy_and_scalar_code(elementwise, source, target):
    """Casts between vector types convert each lane as NumPy does and exactly as the
    scalar code does."""
    values = cast_inputs(source, target)
    vector = run_vectorized(lambda a: Cast(vector_of(target), a), values)
    np.testing.assert_array_equal(vector, elementwise(lambda a: Cast(target, a), values))
    expected = values != 0 if target.is_bool else values.astype(target.numpy)
    np.testing.assert_array_equal(vector, expected)


# ------------------------------------------------------------------------------ selects


def test_select_with_a_vector_condition_picks_lane_by_lane():
    """Select with a bool-vector condition takes each lane from one side or the other."""
    a, b = float_operands(float32)
    out = run_vectorized(lambda x, y: Select(LT(x, y), Sub(y, x), Mul(x, y)), a, b)
    np.testing.assert_array_equal(out, np.where(a < b, b - a, a * b))


@pytest.mark.parametrize("flag", [True, False])
def test_select_with_a_scalar_condition_picks_a_whole_vector(flag):
    """Select with a scalar bool condition takes all lanes from one side."""
    value = Select(Var("flag", bool_), Load(vector_of(int16), "a", DENSE),
                   Load(vector_of(int16), "b", DENSE))
    f = compile_function("pick", over_vectors(Store("out", DENSE, value)),
                         [buffer("a", int16), buffer("b", int16), buffer("out", int16),
                          scalar("flag", bool_), scalar("count", int32)])
    a, b = np.arange(16, dtype=np.int16), -np.arange(16, dtype=np.int16)
    out = np.zeros(16, np.int16)
    f(a, b, out, flag, 2)
    np.testing.assert_array_equal(out, a if flag else b)


# --------------------------------------------------------------------------------- math

TRANSCENDENTAL = {
    "sqrt": (np.sqrt, (0.0, 100.0)),
    "exp": (np.exp, (-10.0, 10.0)),
    "log": (np.log, (1e-3, 1e3)),
    "sin": (np.sin, (-10.0, 10.0)),
    "cos": (np.cos, (-10.0, 10.0)),
    "tanh": (np.tanh, (-5.0, 5.0)),
}
EXACT = {"floor": np.floor, "ceil": np.ceil, "round": np.round, "abs": np.abs}


def math(name: str, *args: Expr) -> Call:
    return Call(args[0].type, name, args, CallKind.MATH)


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("name", list(TRANSCENDENTAL))
def test_vector_math_function_within_a_few_ulp(name, t):
    """sqrt, exp, log, sin, cos and tanh (one libm call per lane) on vectors stay within
    4 ulp of NumPy."""
    reference, (low, high) = TRANSCENDENTAL[name]
    x = np.random.default_rng(3).uniform(low, high, 256).astype(t.numpy)
    np.testing.assert_array_max_ulp(run_vectorized(lambda a: math(name, a), x), reference(x),
                                    maxulp=4)


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
def test_vector_pow(t):
    """pow on vectors stays within 4 ulp of np.power."""
    rng = np.random.default_rng(5)
    x, y = rng.uniform(0.1, 4.0, 256).astype(t.numpy), rng.uniform(-3, 3, 256).astype(t.numpy)
    np.testing.assert_array_max_ulp(run_vectorized(lambda a, b: math("pow", a, b), x, y),
                                    np.power(x, y), maxulp=4)


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("name", list(EXACT))
def test_vector_rounding_and_abs_are_exact(name, t):
    """floor, ceil, round (half to even) and abs on vectors give exactly NumPy's results."""
    halves = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.0, 0.0, 3.7, -3.7]
    x = padded(np.concatenate([halves, np.linspace(-50, 50, 37)]).astype(t.numpy))
    np.testing.assert_array_equal(run_vectorized(lambda a: math(name, a), x), EXACT[name](x))


@pytest.mark.parametrize("t", [int8, int32], ids=str)
def test_vector_integer_abs_wraps_at_min(t):
    """abs on an integer vector negates the negative lanes; abs(MIN) stays MIN."""
    x = padded(np.array([t.min_value(), -5, 0, 5, t.max_value()], dtype=t.numpy))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(run_vectorized(lambda a: math("abs", a), x), np.abs(x))


# ----------------------------------------------------------- masks at the edge of memory

_PROT_NONE, _PROT_READ_WRITE = 0, 3
_libc = ctypes.CDLL(None, use_errno=True)


def guarded_array(values: np.ndarray, guard: str) -> np.ndarray:
    """A copy of `values` that ends right before (`guard="after"`) or starts right after
    (`guard="before"`) an inaccessible page, so touching one element past that end
    crashes the process."""
    page = mmap.PAGESIZE
    data_pages = -(-values.nbytes // page)
    region = mmap.mmap(-1, (data_pages + 1) * page)
    start = ctypes.addressof(ctypes.c_char.from_buffer(region))
    guard_offset = data_pages * page if guard == "after" else 0
    if _libc.mprotect(ctypes.c_void_p(start + guard_offset), ctypes.c_size_t(page),
                      _PROT_NONE) != 0:
        raise OSError(ctypes.get_errno(), "mprotect failed")
    offset = data_pages * page - values.nbytes if guard == "after" else page
    array = np.frombuffer(region, values.dtype, len(values), offset)
    array[:] = values
    return array


def tail_mask(index: Ramp, valid: int) -> Expr:
    """The lanes of `index` below `valid`."""
    return LT(index, Broadcast(const(valid), index.lanes))


def compile_tail(store: Stmt, t: Type = float32) -> CompiledFunction:
    """One vector statement (no loop) over buffers `inp` and `out` of `t`."""
    return compile_function("tail", store, [buffer("inp", t), buffer("out", t)])


@pytest.mark.parametrize("t", [float32, uint8, bool_, float64], ids=str)
def test_masked_dense_access_touches_no_memory_past_the_end(t):
    """A predicated dense load and store of 8 lanes with 5 valid runs on arrays of 5
    elements that end at an inaccessible page."""
    ramp = Ramp(const(0), const(1), LANES)
    mask = tail_mask(ramp, 5)
    value = Load(vector_of(t), "inp", ramp, mask)
    if not t.is_bool:
        value = Add(value, value)
    f = compile_tail(Store("out", ramp, value, mask), t)
    data = np.array([1, 0, 3, 1, 5]).astype(t.numpy)
    inp, out = guarded_array(data, "after"), guarded_array(np.zeros(5, t.numpy), "after")
    f(inp, out)
    np.testing.assert_array_equal(out, data if t.is_bool else data + data)


def test_masked_gather_and_scatter_touch_no_memory_past_the_end():
    """A predicated stride-2 gather and scatter with 5 valid lanes of 8 stay inside
    arrays of 9 elements that end at an inaccessible page (the gathered vector is stored
    whole, so no load of it is dead code)."""
    dense, stride_2 = Ramp(const(0), const(1), LANES), Ramp(const(0), const(2), LANES)
    mask = tail_mask(dense, 5)
    gather = compile_tail(Store("out", dense, Load(vector_of(float32), "inp", stride_2,
                                                   mask)))
    scatter = compile_tail(Store("out", stride_2, Load(vector_of(float32), "inp", dense,
                                                       mask), mask))
    data = np.arange(1, 10, dtype=np.float32)
    gathered = np.full(8, -1, np.float32)
    gather(guarded_array(data, "after"), gathered)
    np.testing.assert_array_equal(gathered[:5], data[::2])
    scattered = guarded_array(np.zeros(9, np.float32), "after")
    scatter(guarded_array(data[:5], "after"), scattered)
    np.testing.assert_array_equal(scattered, [1, 0, 2, 0, 3, 0, 4, 0, 5])


def test_masked_reversed_access_touches_no_memory_before_the_start():
    """A predicated stride -1 store and load with 5 valid lanes of 8 stay inside arrays of
    5 elements that start at an inaccessible page."""
    reversed_ramp = Ramp(const(4), const(-1), LANES)
    mask = LE(Broadcast(const(0), LANES), reversed_ramp)
    value = Load(vector_of(float32), "inp", reversed_ramp, mask)
    f = compile_tail(Store("out", Ramp(const(0), const(1), LANES), value,
                           tail_mask(Ramp(const(0), const(1), LANES), 5)))
    data = np.arange(1, 6, dtype=np.float32)
    inp = guarded_array(data, "before")
    out = guarded_array(np.zeros(5, np.float32), "after")
    f(inp, out)
    np.testing.assert_array_equal(out, data[::-1])
    g = compile_tail(Store("out", reversed_ramp, Load(vector_of(float32), "inp",
                                                      Ramp(const(0), const(1), LANES),
                                                      tail_mask(Ramp(const(0), const(1),
                                                                     LANES), 5)), mask))
    out = guarded_array(np.zeros(5, np.float32), "before")
    g(guarded_array(data, "after"), out)
    np.testing.assert_array_equal(out, data[::-1])


@pytest.mark.parametrize("index", [Ramp(const(0), const(1), LANES),
                                   Ramp(const(0), const(2), LANES),
                                   Ramp(const(14), const(-2), LANES)],
                         ids=["dense", "stride-2", "stride-minus-2"])
def test_masked_off_lanes_are_not_written(index):
    """Stores leave the elements of disabled lanes as they were, for a mask with holes."""
    mask = Load(vector_of(bool_), "keep", Ramp(const(0), const(1), LANES))
    value = Load(vector_of(int32), "inp", Ramp(const(0), const(1), LANES))
    f = compile_function("holes", Store("out", index, value, mask),
                         [buffer("inp", int32), buffer("keep", bool_), buffer("out", int32)])
    keep = np.array([1, 0, 0, 1, 1, 0, 1, 0], dtype=bool)
    out = np.full(16, -1, dtype=np.int32)
    f(np.arange(100, 108, dtype=np.int32), keep, out)
    expected = np.full(16, -1, dtype=np.int32)
    written = [index.base.value + lane * index.stride.value for lane in range(LANES)]
    for lane in np.flatnonzero(keep):
        expected[written[lane]] = 100 + lane
    np.testing.assert_array_equal(out, expected)


# -------------------------------------------------------------------- gathers, scatters


def test_stride_2_gather_and_scatter():
    """A stride-2 gather reads every other element; a stride-2 scatter writes them."""
    every_other = Ramp(Mul(v, const(2 * LANES)), const(2), LANES)
    value = Load(vector_of(float64), "inp", every_other)
    gather = compile_function("gather", over_vectors(Store("out", DENSE, value)),
                              [buffer("inp", float64), buffer("out", float64),
                               scalar("count", int32)])
    data = np.random.default_rng(6).standard_normal(64)
    out = np.zeros(32)
    gather(data, out, 4)
    np.testing.assert_array_equal(out, data[::2])
    scatter = compile_function(
        "scatter", over_vectors(Store("out", every_other, Load(vector_of(float64), "inp",
                                                               DENSE))),
        [buffer("inp", float64), buffer("out", float64), scalar("count", int32)])
    spread = np.zeros(64)
    scatter(out, spread, 4)
    np.testing.assert_array_equal(spread[::2], data[::2])
    np.testing.assert_array_equal(spread[1::2], 0)


@pytest.mark.parametrize("masked", ["no mask", "all lanes", "some lanes"])
def test_data_dependent_gather_and_scatter(masked):
    """A lookup table gathers through indices read from memory and a permutation scatters
    through them, with or without a predicate (all lanes, or a random subset)."""
    rng = np.random.default_rng(7)
    indices = rng.permutation(64).astype(np.int32)
    table = rng.standard_normal(64).astype(np.float32)
    keep = np.ones(64, bool) if masked != "some lanes" else rng.integers(0, 2, 64) > 0
    mask = None if masked == "no mask" else Load(vector_of(bool_), "keep", DENSE)
    where = Load(vector_of(int32), "indices", DENSE)
    args = [buffer("table", float32), buffer("indices", int32), buffer("keep", bool_),
            buffer("out", float32), scalar("count", int32)]
    lookup = compile_function("lookup", over_vectors(
        Store("out", DENSE, Load(vector_of(float32), "table", where, mask), mask)), args)
    out = np.full(64, 99, np.float32)
    lookup(table, indices, keep, out, 8)
    np.testing.assert_array_equal(out, np.where(keep, table[indices], 99))
    permute = compile_function("permute", over_vectors(
        Store("out", where, Load(vector_of(float32), "table", DENSE, mask), mask)), args)
    out = np.full(64, 99, np.float32)
    permute(table, indices, keep, out, 8)
    expected = np.full(64, 99, np.float32)
    expected[indices[keep]] = table[keep]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("enabled", [8, 6], ids=["all-lanes", "first-6-lanes"])
def test_scatter_to_one_address_keeps_the_last_enabled_lane(enabled):
    """Lanes that scatter to the same element leave the last enabled lane's value, as the
    serial loop would."""
    dense = Ramp(const(0), const(1), LANES)
    store = Store("out", Broadcast(const(3), LANES), Load(vector_of(int32), "inp", dense),
                  tail_mask(dense, enabled))
    f = compile_function("same", store, [buffer("inp", int32), buffer("out", int32)])
    out = np.zeros(8, np.int32)
    f(np.arange(10, 18, dtype=np.int32), out)
    assert out[3] == 10 + enabled - 1


def test_stride_minus_1_ramp_reverses_without_a_gather():
    """A ramp of stride -1 reads and writes consecutive elements in reverse order, as one
    vector access and a shuffle, not a gather."""
    backwards = Ramp(Sub(Var("last"), Mul(v, const(LANES))), const(-1), LANES)
    value = Load(vector_of(int32), "inp", backwards)
    f = compile_function("reverse", over_vectors(Store("out", DENSE, value)),
                         [buffer("inp", int32), buffer("out", int32), scalar("last", int32),
                          scalar("count", int32)])
    data = np.arange(40, dtype=np.int32)
    out = np.zeros(40, np.int32)
    f(data, out, 39, 5)
    np.testing.assert_array_equal(out, data[::-1])
    assert "gather" not in f.assembly()
    g = compile_function("unreverse", over_vectors(Store("out", backwards,
                                                         Load(vector_of(int32), "inp", DENSE))),
                         [buffer("inp", int32), buffer("out", int32), scalar("last", int32),
                          scalar("count", int32)])
    back = np.zeros(40, np.int32)
    g(out, back, 39, 5)
    np.testing.assert_array_equal(back, data)


def test_ramp_and_broadcast_values():
    """Ramps with constant and variable base and stride, and broadcasts, hold the values
    they describe."""
    lanes = 4
    ramps = [Ramp(Var("base"), Var("stride"), lanes), Ramp(const(5), const(-3), lanes),
             Ramp(Var("base"), const(2), lanes), Add(Broadcast(Var("stride"), lanes),
                                                     Ramp(const(0), const(1), lanes))]
    body = [Store("out", Ramp(const(lanes * k), const(1), lanes), r)
            for k, r in enumerate(ramps)]
    f = compile_function("ramps", block(*body),
                         [buffer("out", int32), scalar("base", int32),
                          scalar("stride", int32)])
    out = np.zeros(16, np.int32)
    f(out, 10, 7)
    np.testing.assert_array_equal(out, [10, 17, 24, 31, 5, 2, -1, -4, 10, 12, 14, 16,
                                        7, 8, 9, 10])


def test_vector_constants_are_splats():
    """A Const of a vector type holds its value in every lane."""
    f = compile_function("splat", block(
        Store("out", Ramp(const(0), const(1), 4), const(-9, vector_of(int32, 4))),
        Store("flags", Ramp(const(0), const(1), 4), const(True, vector_of(bool_, 4)))),
        [buffer("out", int32), buffer("flags", bool_)])
    out, flags = np.zeros(4, np.int32), np.zeros(4, bool)
    f(out, flags)
    np.testing.assert_array_equal(out, -9)
    assert flags.all()


def test_vector_let_and_letstmt():
    """A vector value bound by LetStmt and by Let is computed once and used by name."""
    t = vector_of(float32)
    doubled = Var("doubled", t)
    value = Let("squared", Mul(doubled, doubled), Add(Var("squared", t), doubled))
    body = LetStmt("doubled", Add(Load(t, "inp", DENSE), Load(t, "inp", DENSE)),
                   Store("out", DENSE, value))
    f = compile_function("lets", over_vectors(body), [buffer("inp", float32),
                                                      buffer("out", float32),
                                                      scalar("count", int32)],
                         strict_float=True)
    data = np.linspace(-2, 2, 16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    f(data, out, 2)
    np.testing.assert_array_equal(out, (data + data) * (data + data) + (data + data))


# ----------------------------------------------------------------- the machine code

_VECTOR_REGISTER = re.compile(r"%[yz]mm\d+")


def instructions(assembly: str) -> list[tuple[str, list[str]]]:
    """(mnemonic, operands) of each instruction of AT&T `assembly`, sources first."""
    parsed = []
    for line in assembly.splitlines():
        if line.startswith("\t") and not line.startswith("\t."):
            mnemonic, _, operands = line.strip().partition("\t")
            parsed.append((mnemonic, [x.strip() for x in re.split(r",\s*(?![^()]*\))",
                                                                     operands) if x]))
    return parsed


def test_dense_vector_load_is_one_vector_move():
    """Each dense float32 vector load is one vector move (or memory operand) into a ymm/zmm
    register, one per vector store, with no scalar loads, inserts or gathers."""
    t = vector_of(float32)
    f = compile_function("scale", over_vectors(Store("out", DENSE, Mul(
        Load(t, "inp", DENSE), Broadcast(const(3.0, float32), LANES)))),
        [buffer("inp", float32), buffer("out", float32), scalar("count", int32)])
    code = instructions(f.assembly())
    loads = [op for op, operands in code if len(operands) >= 2 and "(" in operands[0]
             and _VECTOR_REGISTER.fullmatch(operands[-1])
             and not op.startswith("vbroadcast")]  # splats of the constant 3.0
    stores = [op for op, operands in code if len(operands) >= 2 and "(" in operands[-1]
              and _VECTOR_REGISTER.fullmatch(operands[0])]
    assert len(loads) == len(stores) >= 1
    assert not [op for op, _ in code if op in ("vmovss", "vinsertps") or "gather" in op]


@pytest.mark.parametrize("strict_float", [True, False])
def test_fused_multiply_add_in_vector_code(strict_float):
    """a * b + c on float32 vectors is one FMA by default and rounds twice, as NumPy
    does, with strict_float."""
    rng = np.random.default_rng(8)
    a, b, c = (rng.standard_normal(4096).astype(np.float32) for _ in range(3))
    index = Ramp(Mul(v, const(LANES)), const(1), LANES)
    t = vector_of(float32)
    value = Add(Mul(Load(t, "a", index), Load(t, "b", index)), Load(t, "c", index))
    f = compile_function("madd", over_vectors(Store("out", index, value)),
                         [buffer(x, float32) for x in "abc"] + [buffer("out", float32),
                                                              scalar("count", int32)],
                         strict_float=strict_float)
    out = np.zeros_like(a)
    f(a, b, c, out, 4096 // LANES)
    if strict_float:
        np.testing.assert_array_equal(out, a * b + c)
    else:
        np.testing.assert_allclose(out, a * b + c, rtol=1e-6, atol=1e-6)
    assert ("vfmadd" in f.assembly()) != strict_float


# ------------------------------------------------------------------ invalid vector IR


@pytest.mark.parametrize(("stmt", "message"), [
    (Store("out", const(0), Load(int32, "out", const(1), LT(const(0), const(1)))),
     "only vector accesses have one"),
    (Store("out", DENSE, Load(vector_of(int32), "out", DENSE,
                              Broadcast(LT(const(0), const(1)), 4))), "expected 8 lanes"),
    (Store("out", Ramp(const(0), const(1), 4), Broadcast(const(1), 8)), "access of 8 lanes"),
    (Store("out", DENSE, Broadcast(Broadcast(const(1), 2), 4)), "not a scalar"),
], ids=["predicate-on-scalar-load", "predicate-lanes", "index-lanes", "broadcast-of-vector"])
def test_malformed_vector_ir_is_an_internal_error(stmt, message):
    """Vector IR whose lanes don't line up is a compiler bug, reported as one."""
    with pytest.raises(InternalError, match=message):
        compile_function("bad", over_vectors(stmt), [buffer("out", int32),
                                                     scalar("count", int32)])


def test_vector_arguments_are_refused():
    """Arguments are scalars or buffers of scalars, never vectors."""
    with pytest.raises(InternalError, match="vector type"):
        scalar("x", vector_of(float32))


# --------------------------------------------------- IR from the vectorize_loops pass


def assert_vectorized(f: halo.Func) -> None:
    assert "ramp(" in str(f.lower()), "vectorize_loops left the loop serial"


y, x = halo.vars("y x")


@pytest.mark.parametrize(("dtype", "define", "reference"), [
    (halo.float32, lambda a: a[x] * 2.5 - 1, lambda a: a * np.float32(2.5) - np.float32(1)),
    (halo.float64, lambda a: halo.sqrt(a[x]) + a[x], lambda a: np.sqrt(a) + a),
    (halo.int32, lambda a: a[x] * 3 + x, lambda a: a * 3 + np.arange(len(a), dtype=np.int32)),
    (halo.uint8, lambda a: a[x] // 3 + a[x] % 5, lambda a: a // 3 + a % 5),
    (halo.int16, lambda a: halo.max(a[x], -a[x]), lambda a: np.maximum(a, -a)),
    (halo.bool_, lambda a: a[x] ^ (x % 3 == 0), lambda a: a ^ (np.arange(len(a)) % 3 == 0)),
], ids=["float32", "float64", "int32", "uint8", "int16", "bool"])
@pytest.mark.parametrize("size", [64, 37, 3])
def test_vectorized_func_matches_numpy(dtype, define, reference, size):
    """A Func vectorized by 8 computes NumPy's result, for sizes with and without a tail
    and smaller than one vector."""
    inp = halo.ImageParam(dtype, 1, "inp")
    f = halo.Func("f")
    f[x] = define(inp)
    f.vectorize(x, 8)
    assert_vectorized(f)
    rng = np.random.default_rng(9)
    if dtype.is_bool:
        data = rng.integers(0, 2, size).astype(bool)
    elif dtype.is_float:
        data = rng.uniform(0.5, 10, size).astype(dtype.numpy)
    else:
        data = rng.integers(0, 100, size).astype(dtype.numpy)
    out = f.realize((size,), inputs={inp: data})
    if dtype.is_float:
        np.testing.assert_allclose(out, reference(data), rtol=1e-6)
    else:
        np.testing.assert_array_equal(out, reference(data))


@pytest.mark.parametrize("guard", ["before", "after"])
def test_vectorized_tail_stays_inside_small_buffers(guard):
    """A vector of 8 over 5 elements reads and writes only those 5, next to an inaccessible
    page on either side."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f = halo.Func("f")
    f[x] = inp[x] * 2 + 1
    f.vectorize(x, 8)
    assert_vectorized(f)
    data = np.arange(5, dtype=np.float32)
    out = guarded_array(np.zeros(5, np.float32), guard)
    f.compile()(out=out, inp=guarded_array(data, guard))
    np.testing.assert_array_equal(out, data * 2 + 1)


def test_vectorized_expressions_match_the_reference():
    """Selects, casts, int8 floor division, min/max, math calls and gathers (a transposed
    read and a lookup table) vectorized by 16 match the reference interpreter."""
    a = halo.ImageParam(halo.int8, 2, "a")
    lut = halo.ImageParam(halo.float32, 1, "lut")
    f = halo.Func("f")
    q = a[y, x] // halo.cast(halo.int8, y - 2) + a[y, x] % 3
    value = halo.cast(halo.float32, halo.clamp(q, -20, 20)) + lut[halo.cast(halo.int32,
                                                                          a[x, y]) + 128]
    f[y, x] = halo.select(a[y, x] > 0, halo.exp(value / 16), halo.tanh(value))
    f.vectorize(x, 16)
    assert_vectorized(f)
    rng = np.random.default_rng(10)
    inputs = {a: rng.integers(-128, 127, (40, 40), dtype=np.int8),
              lut: rng.standard_normal(256).astype(np.float32)}
    np.testing.assert_allclose(f.realize((7, 35), inputs=inputs),
                               halo.reference(f, (7, 35), inputs=inputs), rtol=2e-6)


def test_vectorized_loop_inside_a_parallel_loop():
    """Vector code runs in the task function of a parallel loop, on every thread."""
    inp = halo.ImageParam(halo.int32, 2, "inp")
    f = halo.Func("f")
    f[y, x] = inp[y, x] * (y + 1) - x
    f.parallel(y).vectorize(x, 8)
    assert_vectorized(f)
    data = np.random.default_rng(11).integers(-1000, 1000, (9, 29), dtype=np.int32)
    rows, columns = np.indices(data.shape, dtype=np.int32)
    np.testing.assert_array_equal(f.realize(data.shape, inputs={inp: data}),
                                  data * (rows + 1) - columns)


def test_vectorized_float32_loop_uses_vector_registers():
    """The machine code of a Func vectorized by 8 over float32 computes in ymm or zmm
    registers."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f = halo.Func("f")
    f[y, x] = inp[y, x] * inp[y, x] + 1
    f.vectorize(x, 8)
    assembly = f.compile().function.assembly()
    assert re.search(r"\tv(mul|fmadd\d+)ps\t.*%[yz]mm", assembly)
