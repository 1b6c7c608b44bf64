"""LLVM instructions for halo's operators, casts and math calls.

The docstring of `halo/ir/nodes.py` defines what each must compute; this module is where
those semantics meet LLVM's:

* signed 32- and 64-bit `+ - *` carry `nsw`: they must not overflow (nodes.py), and the
  flag lets LLVM widen 32-bit indices to 64 bits once per loop instead of sign-extending
  every address (benchmarks/: blur); narrower and unsigned integers wrap, without flags;
* integer `Div`/`Mod` round toward minus infinity and give 0 for a zero divisor, and a
  divisor that `sdiv`/`udiv` leave undefined (0, and -1 for signed MIN // -1) never
  reaches them;
* floats are IEEE, never reassociated, but `a * b + c` may round once, as a fused
  multiply-add (the `contract` flag, which the code generator adds to float `+ - *`, as
  Halide and C compilers do by default); `Target(strict_float=True)` keeps every
  operation rounded separately, as NumPy does;
* float min/max propagate NaN (np.minimum/np.maximum), and a NaN cast to an integer is 0;
* `bool` behaves as an unsigned one-bit integer where ordering matters (False < True).

Every operator takes the builder, the halo type of its operands and their LLVM values,
and returns the LLVM value of the result. The types may be vectors: LLVM's instructions are
lane-wise, so each emitter serves `float` and `<8 x float>` alike, building its constants
in the type of its operands (`ir.Constant` of a vector type is a splat); a libm call, which
has no vector form, runs once per lane.
"""
from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from halo.backends.llvm import vector_math, vectors
from halo.backends.llvm.llvm_types import declare_intrinsic, value_type
from halo.errors import InternalError
from halo.ir.types import Type, float32

# ------------------------------------------------------------------------------ arithmetic


def _require_number(t: Type, operator: str) -> None:
    if t.is_bool:
        raise InternalError(f"{operator} is not defined on bool operands")


def _require_integral(t: Type, operator: str) -> None:
    if t.is_float:
        raise InternalError(f"{operator} is not defined on {t} operands")


def _no_wrap(t: Type) -> tuple[str, ...]:
    """`nsw` where overflow is excluded by halo's semantics (signed, 32 or 64 bits)."""
    return ("nsw",) if t.is_int and t.bits >= 32 else ()


def add(b: ir.IRBuilder, t: Type, x: ir.Value, y: ir.Value) -> ir.Value:
    _require_number(t, "Add")
    return b.fadd(x, y) if t.is_float else b.add(x, y, flags=_no_wrap(t))


def sub(b: ir.IRBuilder, t: Type, x: ir.Value, y: ir.Value) -> ir.Value:
    _require_number(t, "Sub")
    return b.fsub(x, y) if t.is_float else b.sub(x, y, flags=_no_wrap(t))


def mul(b: ir.IRBuilder, t: Type, x: ir.Value, y: ir.Value) -> ir.Value:
    _require_number(t, "Mul")
    return b.fmul(x, y) if t.is_float else b.mul(x, y, flags=_no_wrap(t))


def div(b: ir.IRBuilder, t: Type, x: ir.Value, y: ir.Value) -> ir.Value:
    _require_number(t, "Div")
    if t.is_float:
        return b.fdiv(x, y)
    quotient, _ = _floor_div_mod(b, t, x, y)
    return quotient


def mod(b: ir.IRBuilder, t: Type, x: ir.Value, y: ir.Value) -> ir.Value:
    _require_number(t, "Mod")
    if t.is_float:
        # x - y * floor(x / y), every step rounded to the type, as nodes.py defines it
        floor = _intrinsic(b, "llvm.floor", x.type)
        return b.fsub(x, b.fmul(y, b.call(floor, [b.fdiv(x, y)])))
    _, remainder = _floor_div_mod(b, t, x, y)
    return remainder


def _floor_div_mod(b: ir.IRBuilder, t: Type, x: ir.Value,
                   y: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The floor quotient and remainder of integers `x` and `y`; both are 0 when y == 0."""
    zero, one = ir.Constant(x.type, 0), ir.Constant(x.type, 1)
    if _positive_constant(y):  # the common case, index arithmetic: no special divisors
        if t.is_uint:
            return b.udiv(x, y), b.urem(x, y)
        quotient, remainder = b.sdiv(x, y), b.srem(x, y)
        rounds_down = b.icmp_signed("<", remainder, zero)  # x < 0, not a multiple of y
        return (b.sub(quotient, b.zext(rounds_down, x.type)),
                b.add(remainder, b.select(rounds_down, y, zero)))
    divisor_is_zero = b.icmp_unsigned("==", y, zero)
    if t.is_uint:
        safe_y = b.select(divisor_is_zero, one, y)
        return (b.select(divisor_is_zero, zero, b.udiv(x, safe_y)),
                b.select(divisor_is_zero, zero, b.urem(x, safe_y)))
    # sdiv is undefined for y == 0 and for MIN / -1: both divide by 1 instead, and the
    # results are patched below (x // -1 == -x, which wraps at MIN; x % -1 == 0).
    divisor_is_minus_one = b.icmp_signed("==", y, ir.Constant(x.type, -1))
    safe_y = b.select(b.or_(divisor_is_zero, divisor_is_minus_one), one, y)
    quotient = b.sdiv(x, safe_y)
    remainder = b.srem(x, safe_y)
    # sdiv rounds toward zero; floor division differs from it exactly when the remainder is
    # nonzero and its sign differs from the divisor's.
    rounds_down = b.and_(b.icmp_signed("!=", remainder, zero),
                         b.icmp_signed("<", b.xor(remainder, safe_y), zero))
    quotient = b.sub(quotient, b.zext(rounds_down, x.type))
    remainder = b.add(remainder, b.select(rounds_down, safe_y, zero))
    quotient = b.select(divisor_is_minus_one, b.neg(x), quotient)
    return (b.select(divisor_is_zero, zero, quotient),
            b.select(divisor_is_zero, zero, remainder))


def _positive_constant(y: ir.Value) -> bool:
    """Whether `y` is a constant integer, or a vector of them, all above zero."""
    if not isinstance(y, ir.Constant):
        return False
    lanes = y.constant if isinstance(y.constant, list) else [y]
    return all(isinstance(v, ir.Constant) and isinstance(v.constant, int) and v.constant > 0
               for v in lanes)


def minimum(b: ir.IRBuilder, t: Type, x: ir.Value, y: ir.Value) -> ir.Value:
    """`np.minimum`: the smaller operand; on floats NaN if either operand is NaN."""
    if t.is_float:
        return _nan_propagating(b, x, y, "<")
    return b.select(less_than(b, t, x, y), x, y)


def maximum(b: ir.IRBuilder, t: Type, x: ir.Value, y: ir.Value) -> ir.Value:
    """`np.maximum`: the larger operand; on floats NaN if either operand is NaN."""
    if t.is_float:
        return _nan_propagating(b, x, y, ">")
    return b.select(less_than(b, t, y, x), x, y)


def _nan_propagating(b: ir.IRBuilder, x: ir.Value, y: ir.Value, better: str) -> ir.Value:
    """min (`better` "<") or max (">") of floats, NaN if either is NaN.

    `y better-than x ? y : x` keeps x when either is NaN (an ordered compare is false), and
    is one x86 `minps`/`maxps` (which returns its second operand on NaN). When y is a
    constant that isn't NaN (`max(v, 0.0)`, a clamp's bounds) that is all; otherwise a
    NaN y is picked by one more compare and blend. (`llvm.minimum` also orders -0.0
    below +0.0, which costs more on x86 and which halo doesn't promise.)"""
    if _is_non_nan_constant(x) and not _is_non_nan_constant(y):
        x, y = y, x
    picked = b.select(b.fcmp_ordered(better, y, x), y, x)
    if _is_non_nan_constant(y):
        return picked
    return b.select(b.fcmp_unordered("uno", y, y), y, picked)


def _is_non_nan_constant(v: ir.Value) -> bool:
    """Whether `v` is a float constant, or a vector of them, none NaN."""
    if not isinstance(v, ir.Constant):
        return False
    lanes = v.constant if isinstance(v.constant, (list, tuple)) else [v]
    return all(isinstance(c, ir.Constant) and isinstance(c.constant, float)
               and c.constant == c.constant for c in lanes)


# ------------------------------------------------------------------------ comparisons, logic


def _compare(b: ir.IRBuilder, t: Type, operator: str, x: ir.Value, y: ir.Value) -> ir.Value:
    if t.is_float:
        # `!=` is unordered so that NaN != NaN, as in NumPy; the others are false on NaN
        if operator == "!=":
            return b.fcmp_unordered(operator, x, y)
        return b.fcmp_ordered(operator, x, y)
    if t.is_int:
        return b.icmp_signed(operator, x, y)
    return b.icmp_unsigned(operator, x, y)


def equal(b: ir.IRBuilder, t: Type, x: ir.Value, y: ir.Value) -> ir.Value:
    return _compare(b, t, "==", x, y)


def not_equal(b: ir.IRBuilder, t: Type, x: ir.Value, y: ir.Value) -> ir.Value:
    return _compare(b, t, "!=", x, y)


def less_than(b: ir.IRBuilder, t: Type, x: ir.Value, y: ir.Value) -> ir.Value:
    return _compare(b, t, "<", x, y)


def less_equal(b: ir.IRBuilder, t: Type, x: ir.Value, y: ir.Value) -> ir.Value:
    return _compare(b, t, "<=", x, y)


def and_(b: ir.IRBuilder, t: Type, x: ir.Value, y: ir.Value) -> ir.Value:
    """Logical and on bool (i1), bitwise and on integers: one LLVM instruction for both."""
    _require_integral(t, "And")
    return b.and_(x, y)


def or_(b: ir.IRBuilder, t: Type, x: ir.Value, y: ir.Value) -> ir.Value:
    _require_integral(t, "Or")
    return b.or_(x, y)


def xor(b: ir.IRBuilder, t: Type, x: ir.Value, y: ir.Value) -> ir.Value:
    _require_integral(t, "Xor")
    return b.xor(x, y)


def not_(b: ir.IRBuilder, t: Type, x: ir.Value) -> ir.Value:
    _require_integral(t, "Not")
    return b.not_(x)


# ----------------------------------------------------------------------------------- casts


def cast(b: ir.IRBuilder, source: Type, target: Type, x: ir.Value) -> ir.Value:
    """`x` of type `source` converted to `target` by the cast rules of nodes.py."""
    if source == target:
        return x
    to = value_type(target)
    if target.is_bool:
        if source.is_float:
            return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))  # NaN is true
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    if source.is_bool:
        return b.uitofp(x, to) if target.is_float else b.zext(x, to)
    if source.is_float and target.is_float:
        if target.bits > source.bits:
            return b.fpext(x, to)
        if source.bits == 64 and target.bits == 16:
            return _double_to_half(b, x)
        return b.fptrunc(x, to)
    if source.is_float:  # NaN gives 0 (fptosi/fptoui would give poison)
        converted = b.fptosi(x, to) if target.is_int else b.fptoui(x, to)
        return b.select(b.fcmp_unordered("uno", x, x), ir.Constant(converted.type, 0),
                        converted)
    if target.is_float:
        return b.sitofp(x, to) if source.is_int else b.uitofp(x, to)
    if target.bits > source.bits:
        return b.sext(x, to) if source.is_int else b.zext(x, to)
    if target.bits < source.bits:
        return b.trunc(x, to)
    return x  # int <-> uint of one width: LLVM integers are signless, the bits are the value


def _double_to_half(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """float64 -> float16, rounded once to nearest-even, with no library call.

    LLVM lowers this `fptrunc` on x86 to a call to `__truncdfhf2`, which only libgcc >= 12
    provides and the process may not have loaded. Rounding to float32 *toward odd* first and
    then to float16 gives the correctly rounded result, since float32 carries more than two
    extra bits (Boldo and Melquiond, "When double rounding is odd", 2005).
    """
    single, bits = _with_lanes_of(x, ir.FloatType()), _with_lanes_of(x, ir.IntType(32))
    nearest = b.fptrunc(x, single)
    widened = b.fpext(nearest, x.type)
    fabs = _intrinsic(b, "llvm.fabs", x.type)
    # float bits order like magnitudes, so one less is one float32 step toward zero
    rounded_away = b.fcmp_ordered(">", b.call(fabs, [widened]), b.call(fabs, [x]))
    truncated = b.sub(b.bitcast(nearest, bits), b.zext(rounded_away, bits))
    odd = b.bitcast(b.or_(truncated, ir.Constant(bits, 1)), single)
    inexact = b.fcmp_ordered("!=", widened, x)  # false for NaN, which stays as it is
    return b.fptrunc(b.select(inexact, odd, nearest), _with_lanes_of(x, ir.HalfType()))


# ------------------------------------------------------------------------------ math calls

# halo name -> LLVM intrinsic, on every float type
_FLOAT_INTRINSICS = {
    "sqrt": "llvm.sqrt",
    "exp": "llvm.exp",
    "log": "llvm.log",
    "pow": "llvm.pow",
    "sin": "llvm.sin",
    "cos": "llvm.cos",
    "floor": "llvm.floor",
    "ceil": "llvm.ceil",
    "round": "llvm.roundeven",  # half to even, as np.round
    "abs": "llvm.fabs",
}
# halo name -> libm symbol by bit width; MCJIT resolves it from the process (NumPy loaded libm)
_LIBM_FUNCTIONS = {"tanh": {32: "tanhf", 64: "tanh"}}
_ARITY = {"pow": 2}


def math_call(b: ir.IRBuilder, name: str, t: Type, args: Sequence[ir.Value]) -> ir.Value:
    """The math function `name` applied to `args`, all of type `t`."""
    if name not in _FLOAT_INTRINSICS and name not in _LIBM_FUNCTIONS:
        raise InternalError(f"unknown math function {name!r}")
    if len(args) != _ARITY.get(name, 1):
        raise InternalError(f"math function {name!r} takes {_ARITY.get(name, 1)} "
                            f"argument(s), got {len(args)}")
    if name == "abs" and not t.is_float:
        return _integer_abs(b, t, args[0])
    if not t.is_float:
        raise InternalError(f"math function {name!r} takes floats, got {t}")
    if t.lanes > 1:
        vectorized = vector_math.vector_call(b, name, t, list(args))
        if vectorized is not None:
            return vectorized
    if name in _FLOAT_INTRINSICS:
        function = _intrinsic(b, _FLOAT_INTRINSICS[name], args[0].type, len(args))
        return b.call(function, list(args))
    return _libm_call(b, _LIBM_FUNCTIONS[name], t, args[0])


def _integer_abs(b: ir.IRBuilder, t: Type, x: ir.Value) -> ir.Value:
    if not t.is_int:
        return x  # uint and bool are never negative
    i1 = ir.IntType(1)
    function = declare_intrinsic(b.module, "llvm.abs", [x.type],
                                 ir.FunctionType(x.type, [x.type, i1]))
    # the flag (one for all lanes) says abs(MIN) is not poison: it wraps to MIN
    return b.call(function, [x, ir.Constant(i1, 0)])


def _libm_call(b: ir.IRBuilder, symbols: dict[int, str], t: Type, x: ir.Value) -> ir.Value:
    if t.lanes > 1:  # libm has no vector variants, and the lanes then match scalar code's
        return vectors.map_lanes(b, lambda lane: _libm_call(b, symbols, t.element_of(), lane),
                                 [x], x.type)
    if t.bits in symbols:
        return b.call(_external(b, symbols[t.bits], x.type), [x])
    # float16: libm has no half variant, so compute in float32 and round once
    wide = value_type(float32)
    result = b.call(_external(b, symbols[32], wide), [b.fpext(x, wide)])
    return b.fptrunc(result, x.type)


def _intrinsic(b: ir.IRBuilder, name: str, t: ir.Type, arity: int = 1) -> ir.Function:
    return declare_intrinsic(b.module, name, [t], ir.FunctionType(t, [t] * arity))


def _with_lanes_of(x: ir.Value, element: ir.Type) -> ir.Type:
    """`element`, or a vector of it as long as `x` when `x` is a vector."""
    return ir.VectorType(element, x.type.count) if isinstance(x.type, ir.VectorType) else element


def _external(b: ir.IRBuilder, symbol: str, t: ir.Type) -> ir.Function:
    module = b.module
    existing = module.globals.get(symbol)
    return existing if existing is not None else ir.Function(module, ir.FunctionType(t, [t]),
                                                              symbol)
