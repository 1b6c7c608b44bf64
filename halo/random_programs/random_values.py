"""Expressions of random programs as halo source, with the value range and error bound
of what they compute.

Every `Value` knows the interval its results lie in and, for float32, a bound on the
absolute rounding error any evaluation order can add (0 when every operation is exact:
small dyadic rationals added, subtracted, compared). The builders keep programs inside
what halo defines: int32 values stay within +-2**24 (signed overflow is unspecified),
float values stay finite (unless an input holds NaN or an infinity: those propagate the
same way in every legal order), and float results are only compared or cast to integers
when they are exact, so a different (but legal) rounding can never flip a branch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

INT32_LIMIT = 1 << 24          # int32 values stay inside +-INT32_LIMIT
MUL_OPERAND_LIMIT = 1 << 12    # int32 factors are clamped to this before multiplying
FLOAT_LIMIT = 1.0e6            # float values stay inside +-FLOAT_LIMIT
EXACT_BITS = 22                # a float is exact while magnitude * 2**frac < 2**EXACT_BITS
EPS = 5.0e-7                   # relative error one float32 operation may add (~4 ulps)

DTYPES = ("uint8", "int16", "int32", "float32")
WRAPPING = {"uint8": (0, 255), "int16": (-32768, 32767)}
INT_RANGE = {**WRAPPING, "int32": (-INT32_LIMIT, INT32_LIMIT)}


@dataclass(frozen=True)
class Value:
    """An expression (`src`, halo source), its dtype, the interval [lo, hi] it lies in,
    `err` (float32: bound on the absolute rounding error; 0 means exact) and `frac` (an
    exact float is a multiple of 2**-frac)."""
    src: str
    dtype: str
    lo: float
    hi: float
    err: float = 0.0
    frac: int = 0

    @property
    def mag(self) -> float:
        return max(abs(self.lo), abs(self.hi))

    @property
    def is_float(self) -> bool:
        return self.dtype == "float32"

    @property
    def exact(self) -> bool:
        return not self.is_float or self.err == 0.0


def dtype_src(dtype: str) -> str:
    return f"halo.{dtype}"


def literal(dtype: str, value: float) -> str:
    """A Python literal that halo's weak-scalar rule types as `dtype`."""
    if dtype == "float32":
        return repr(float(value))
    return str(int(value))


def const(dtype: str, value: float) -> Value:
    if dtype == "float32":
        frac = 0
        while value * 2**frac != int(value * 2**frac):
            frac += 1
        return Value(literal(dtype, value), dtype, value, value, 0.0, frac)
    return Value(literal(dtype, value), dtype, value, value)


def finish(src: str, dtype: str, lo: float, hi: float, err: float = 0.0,
           frac: int = 0) -> Value:
    """A Value for `src` whose exact result lies in [lo, hi]: narrow integers wrap to
    their type's range, int32 and float32 results beyond the limits are clamped."""
    if dtype in WRAPPING:
        tlo, thi = WRAPPING[dtype]
        if lo < tlo or hi > thi:
            lo, hi = tlo, thi
        return Value(src, dtype, lo, hi)
    if dtype == "int32":
        if lo < -INT32_LIMIT or hi > INT32_LIMIT:
            src = f"halo.clamp({src}, {-INT32_LIMIT}, {INT32_LIMIT})"
            lo, hi = max(lo, -INT32_LIMIT), min(hi, INT32_LIMIT)
        return Value(src, dtype, lo, hi)
    mag = max(abs(lo), abs(hi))
    if err == 0.0 and mag * 2.0**frac >= 2.0**EXACT_BITS:
        err = EPS * mag
    if mag > FLOAT_LIMIT:
        src = f"halo.clamp({src}, {-FLOAT_LIMIT!r}, {FLOAT_LIMIT!r})"
        lo, hi = max(lo, -FLOAT_LIMIT), min(hi, FLOAT_LIMIT)
    return Value(src, dtype, lo, hi, err, frac if err == 0.0 else 0)


def rounded(err: float, mag: float) -> float:
    """The error after one more rounding of a result of magnitude `mag`."""
    return err + EPS * mag


def cast(v: Value, dtype: str, saturate: bool = True) -> Value | None:
    """`v` as `dtype`; None where that would not be well defined (an inexact float to an
    integer, where a legal rounding difference could change the integer). A float is
    clamped to its own interval first, so an infinity (which inputs may hold outside
    their interval) stays inside it; NaN casts to 0."""
    if v.dtype == dtype:
        return v
    if dtype == "float32":
        return finish(f"halo.cast(halo.float32, {v.src})", dtype, v.lo, v.hi)
    tlo, thi = INT_RANGE[dtype]
    if v.is_float:
        if not v.exact:
            return None
        lo, hi = min(max(v.lo, tlo), thi), max(min(v.hi, thi), tlo)
        src = f"halo.cast({dtype_src(dtype)}, halo.clamp({v.src}, {float(lo)!r}, {float(hi)!r}))"
        return Value(src, dtype, min(math.trunc(lo), 0), max(math.trunc(hi), 0))
    if v.lo >= tlo and v.hi <= thi:
        return Value(f"halo.cast({dtype_src(dtype)}, {v.src})", dtype, v.lo, v.hi)
    if saturate or dtype == "int32":
        inner = f"halo.clamp({v.src}, {tlo}, {thi})"
        return Value(f"halo.cast({dtype_src(dtype)}, {inner})", dtype,
                     max(v.lo, tlo) if v.lo <= thi else tlo, min(v.hi, thi) if v.hi >= tlo else thi)
    return finish(f"halo.cast({dtype_src(dtype)}, {v.src})", dtype, *WRAPPING[dtype])


def clamp_mag(v: Value, limit: float) -> Value:
    """`v` clamped into [-limit, limit] (unsigned: [0, limit]) when it may leave it.
    `limit` is a whole number: a clamped value may be the limit, so a fraction in it
    would make an exact value a multiple of a smaller power of two than `v.frac` says."""
    lower = 0 if v.dtype == "uint8" else -limit
    if v.lo >= lower and v.hi <= limit:
        return v
    lo_s, hi_s = literal(v.dtype, lower), literal(v.dtype, limit)
    return Value(f"halo.clamp({v.src}, {lo_s}, {hi_s})", v.dtype, max(v.lo, lower),
                 min(v.hi, limit), v.err, v.frac)


def _interval(op: str, a: Value, b: Value) -> tuple[float, float]:
    if op == "+":
        return a.lo + b.lo, a.hi + b.hi
    if op == "-":
        return a.lo - b.hi, a.hi - b.lo
    ends = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return min(ends), max(ends)


def arith(op: str, a: Value, b: Value) -> Value:
    """`a op b` for op in + - *, both of one dtype."""
    assert a.dtype == b.dtype
    if op == "*" and a.dtype == "int32" and a.mag * b.mag > 2**30:
        a, b = clamp_mag(a, MUL_OPERAND_LIMIT), clamp_mag(b, MUL_OPERAND_LIMIT)
    if op == "*" and a.is_float and a.mag * b.mag > FLOAT_LIMIT:
        a, b = clamp_mag(a, 1000.0), clamp_mag(b, 1000.0)
    lo, hi = _interval(op, a, b)
    if op == "*":
        err = a.mag * b.err + b.mag * a.err + a.err * b.err
        frac = a.frac + b.frac
    else:
        err, frac = a.err + b.err, max(a.frac, b.frac)
    if err:
        err = rounded(err, max(abs(lo), abs(hi)))
    return finish(f"({a.src} {op} {b.src})", a.dtype, lo, hi, err, frac)


def minmax(op: str, a: Value, b: Value) -> Value:
    fn = min if op == "min" else max
    return Value(f"halo.{op}({a.src}, {b.src})", a.dtype, fn(a.lo, b.lo), fn(a.hi, b.hi),
                 max(a.err, b.err), max(a.frac, b.frac))


def divide(a: Value, b: Value) -> Value:
    """Integers: floor division (by zero gives 0). Floats: a / (|b| + 1), never by 0."""
    if not a.is_float:
        bound = a.mag + 1
        lo = 0 if a.dtype == "uint8" else -bound
        return finish(f"({a.src} // {b.src})", a.dtype, lo, min(bound, INT_RANGE[a.dtype][1]))
    err = rounded(a.err + a.mag * b.err + EPS * a.mag, a.mag)
    return finish(f"({a.src} / (halo.abs({b.src}) + 1.0))", a.dtype, -a.mag, a.mag, err)


def modulo(a: Value, b: Value) -> Value:
    """Integer floor modulo (by zero gives 0): the sign of the divisor."""
    lo = min(0, b.lo + 1)
    hi = max(0, b.hi - 1)
    return Value(f"({a.src} % {b.src})", a.dtype, lo, hi)


def bitwise(op: str, a: Value, b: Value) -> Value:
    bits = max(int(a.mag), int(b.mag), 1).bit_length()
    if a.dtype == "uint8" or (a.lo >= 0 and b.lo >= 0):
        lo, hi = 0, 2**bits - 1
    else:
        lo, hi = -(2**bits), 2**bits - 1
    return finish(f"({a.src} {op} {b.src})", a.dtype, lo, hi)


def select(cond: str, a: Value, b: Value) -> Value:
    return Value(f"halo.select({cond}, {a.src}, {b.src})", a.dtype, min(a.lo, b.lo),
                 max(a.hi, b.hi), max(a.err, b.err), max(a.frac, b.frac))


def math_call(fn: str, v: Value) -> Value | None:
    """A float math function applied where it is defined and well conditioned."""
    if not v.is_float:
        return None
    m, e = v.mag, v.err
    if fn == "sqrt":
        return Value(f"halo.sqrt(halo.abs({v.src}) + 1.0)", v.dtype, 1.0, math.sqrt(m + 1),
                     rounded(e / 2 + EPS * m, math.sqrt(m + 1)))
    if fn == "exp":
        c = min(m, 6.0)
        hi = math.exp(c)
        return Value(f"halo.exp(halo.clamp({v.src}, -6.0, 6.0))", v.dtype, math.exp(-c), hi,
                     rounded(hi * e, hi))
    if fn == "log":
        hi = math.log(m + 1)
        return Value(f"halo.log(halo.abs({v.src}) + 1.0)", v.dtype, 0.0, hi,
                     rounded(e + EPS * m, hi))
    if fn in ("sin", "cos", "tanh"):
        return Value(f"halo.{fn}({v.src})", v.dtype, -1.0, 1.0, rounded(e + EPS * m, 1.0))
    if fn == "abs":
        return Value(f"halo.abs({v.src})", v.dtype, 0.0, m, e, v.frac)
    if fn in ("floor", "ceil", "round"):
        if not v.exact:
            return None
        return Value(f"halo.{fn}({v.src})", v.dtype, math.floor(v.lo), math.ceil(v.hi))
    if fn == "pow":
        base = min(m, 30.0) + 1
        hi = base**1.5
        return Value(f"halo.pow(halo.min(halo.abs({v.src}), 30.0) + 1.0, 1.5)", v.dtype, 1.0,
                     hi, rounded(1.5 * math.sqrt(base) * e + EPS * hi, hi))
    raise ValueError(fn)


MATH_FUNCTIONS = ("sqrt", "exp", "log", "sin", "cos", "tanh", "abs", "floor", "ceil",
                  "round", "pow")


def reduce_err(term: Value, count: int) -> float:
    """The error of a sum of `count` terms like `term`, in any order of additions."""
    if term.exact and term.mag * count * 2.0**term.frac < 2.0**EXACT_BITS:
        return 0.0
    return count * term.err + EPS * count * count * term.mag
