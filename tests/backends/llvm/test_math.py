"""Math calls compiled by the LLVM backend against NumPy: within a few ulp for the
transcendental functions, exactly for the rounding ones and abs."""
from __future__ import annotations

import numpy as np
import pytest

from halo.ir.nodes import Call, CallKind, Expr
from halo.ir.types import float16, float32, float64, int8, int32, int64, uint16

FLOAT_TYPES = [float16, float32, float64]

# name -> (NumPy function, domain of the test inputs)
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


def inputs(dtype: np.dtype, low: float, high: float) -> np.ndarray:
    return np.random.default_rng(3).uniform(low, high, 1000).astype(dtype)


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("name", list(TRANSCENDENTAL))
def test_transcendental_function(elementwise, name, t):
    """sqrt, exp, log, sin, cos and tanh stay within 4 ulp of NumPy."""
    reference, (low, high) = TRANSCENDENTAL[name]
    x = inputs(t.numpy, low, high)
    out = elementwise(lambda a: math(name, a), x)
    np.testing.assert_array_max_ulp(out, reference(x), maxulp=4)


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
def test_pow(elementwise, t):
    """pow(x, y) stays within 4 ulp of np.power."""
    x = inputs(t.numpy, 0.1, 4.0)
    y = inputs(t.numpy, -3.0, 3.0)[::-1].copy()
    out = elementwise(lambda a, b: math("pow", a, b), x, y)
    np.testing.assert_array_max_ulp(out, np.power(x, y), maxulp=4)


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("name", list(EXACT))
def test_rounding_and_abs_are_exact(elementwise, name, t):
    """floor, ceil, round (half to even) and abs give exactly NumPy's results."""
    halves = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.0, 0.0, 3.7, -3.7]
    x = np.concatenate([halves, inputs(np.float64, -50, 50)]).astype(t.numpy)
    np.testing.assert_array_equal(elementwise(lambda a: math(name, a), x), EXACT[name](x))


@pytest.mark.parametrize("t", [int8, int32, int64, uint16], ids=str)
def test_integer_abs(elementwise, t):
    """abs on integers negates negative values and wraps abs(MIN) to MIN, as np.abs."""
    low, high = t.min_value(), t.max_value()
    x = np.array([v for v in (low, low + 1, -5, -1, 0, 1, 5, high) if v >= low], dtype=t.numpy)
    np.testing.assert_array_equal(elementwise(lambda a: math("abs", a), x), np.abs(x))
