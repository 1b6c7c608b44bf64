"""vector_math: exp, log, sin, cos, tanh and pow of whole vectors through libmvec, where
the host has it, cut into the host's register width."""
from __future__ import annotations

import re

import numpy as np
import pytest

import halo
from halo.backends.llvm import vector_math
from halo.target import host_cpu

x, = halo.vars("x")

# name -> (halo function, NumPy's, range of random arguments)
FUNCTIONS = {
    "exp": (halo.exp, np.exp, (-100.0, 100.0)),
    "log": (halo.log, np.log, (1e-30, 1e30)),
    "sin": (halo.sin, np.sin, (-1e4, 1e4)),
    "cos": (halo.cos, np.cos, (-1e4, 1e4)),
    "tanh": (halo.tanh, np.tanh, (-20.0, 20.0)),
}
SPECIAL = [np.inf, -np.inf, np.nan, 0.0, -0.0]
needs_libmvec = pytest.mark.skipif(not vector_math._available(),
                                   reason="the host has no libmvec")


def vectorized(function, t: halo.Type, lanes: int, arity: int = 1):
    inputs = [halo.ImageParam(t, 1, f"in{k}") for k in range(arity)]
    f = halo.Func("f")
    f[x] = function(*(inp[x] for inp in inputs))
    f.vectorize(x, lanes)
    return f, inputs


def log_spaced(low: float, high: float, size: int, dtype) -> np.ndarray:
    """Values spread over the range's magnitudes as well as its sign."""
    rng = np.random.default_rng(0)
    if low > 0:
        return np.exp(rng.uniform(np.log(low), np.log(high), size)).astype(dtype)
    return (rng.uniform(low, high, size) * 10.0 ** rng.uniform(-6, 0, size)).astype(dtype)


@pytest.mark.parametrize("lanes", [4, 8, 16, 32])
@pytest.mark.parametrize("t", [halo.float32, halo.float64], ids=str)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_vector_math_within_4_ulp_and_keeps_special_values(name, t, lanes):
    """Within 4 ulp of NumPy over a wide range (prime length: the last vector is
    shifted), and inf, -inf, NaN and ±0 give what libm gives."""
    function, reference, (low, high) = FUNCTIONS[name]
    f, (inp,) = vectorized(function, t, lanes)
    a = log_spaced(low, high, 1009, t.numpy)
    a[:len(SPECIAL)] = SPECIAL
    out = f.realize((len(a),), inputs={inp: a})
    with np.errstate(all="ignore"):
        want = reference(a)
    np.testing.assert_array_equal(out[:len(SPECIAL)], want[:len(SPECIAL)])
    np.testing.assert_array_max_ulp(out, want, maxulp=4)


@pytest.mark.parametrize("t", [halo.float32, halo.float64], ids=str)
def test_vector_pow_within_4_ulp(t):
    f, (base, exponent) = vectorized(halo.pow, t, 8, arity=2)
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0.01, 50.0, 1009).astype(t.numpy), rng.uniform(-8, 8, 1009).astype(t.numpy)
    a[:4], b[:4] = [0.0, 2.0, -2.0, np.inf], [0.5, np.nan, 3.0, -1.0]
    out = f.realize((1009,), inputs={base: a, exponent: b})
    np.testing.assert_array_max_ulp(out, np.power(a, b), maxulp=4)


def calls(source: str, function: str) -> list[str]:
    """The libmvec symbols `source` calls for `function`, one per call."""
    return re.findall(rf"call [^@]*@(_ZGV\w+_{function}f?)\(", source)


@needs_libmvec
@pytest.mark.parametrize("lanes", [4, 8, 16, 32])
def test_vector_exp_is_one_call_per_register(lanes):
    """An exp of `lanes` float32 lanes is one libmvec call per register of the host's
    widest width that divides it, not a libm call per lane."""
    register = next(width for width in (16, 8, 4)
                    if width * 4 <= host_cpu().vector_bytes and lanes % width == 0)
    isa = {16: "e", 8: "d", 4: "b"}[register]
    sources = [vectorized(halo.exp, halo.float32, width)[0].compile().source()
               for width in (lanes, register)]
    # as many calls per copy of the loop body (main loop and tail) as registers
    assert calls(sources[0], "exp") == calls(sources[1], "exp") * (lanes // register)
    assert set(calls(sources[0], "exp")) == {f"_ZGV{isa}N{register}v_expf"}
    assert "@expf(" not in sources[0] and "llvm.exp.v" not in sources[0]


@needs_libmvec
def test_vector_math_of_three_lanes_calls_libm_per_lane():
    """No register width divides 3 lanes: each lane calls libm, and the answer is still
    within 4 ulp."""
    f, (inp,) = vectorized(halo.exp, halo.float32, 3)
    assert calls(f.compile().source(), "exp") == []
    a = np.linspace(-5, 5, 10, dtype=np.float32)
    np.testing.assert_array_max_ulp(f.realize((10,), inputs={inp: a}), np.exp(a), maxulp=4)
